/* A WASI command in C: built against wasi-libc (preview1) and wrapped into a
 * component with the preview1 command adapter. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    printf("hello from c-hello\n");
    printf("argc: %d\n", argc);
    for (int i = 1; i < argc; i++) {
        printf("arg: %s\n", argv[i]);
    }
    const char *greeting = getenv("GREETING");
    printf("env GREETING: %s\n", greeting ? greeting : "<unset>");
    return 0;
}
