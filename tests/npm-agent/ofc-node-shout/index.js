// Proves that dependencies are resolved and installed.
module.exports = (text) => text.toUpperCase() + "!";
