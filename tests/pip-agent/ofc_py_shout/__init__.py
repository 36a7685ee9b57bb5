"""The dependency of ofc-py-echo: proves that dependencies are resolved and installed."""


def shout(text):
    return text.upper() + "!"
