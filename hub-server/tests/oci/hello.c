/* The entrypoint of the FROM-scratch test image: built with `gcc -static`, it needs nothing
 * from the image but itself. */
#include <stdio.h>

int main(void) {
    puts("hello from a scratch image on the ofc hub");
    return 0;
}
