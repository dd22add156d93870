/* lock_demo -- take, show and release one lock (placeholder until the CLI). */
#include <stdio.h>
#include <redlock.h>
int main(void) { return 0; }
