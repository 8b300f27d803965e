/*
 * slimkube's pod sandbox process. It holds the pod's network and IPC namespaces open for the pod's
 * app containers, reaps zombies (it is PID 1 when the pod shares its PID namespace), and exits at once
 * on SIGINT/SIGTERM so stopping a sandbox never waits for a grace period. Same contract as upstream's
 * build/pause/linux/pause.c. Built static (gcc -static -Os -s) so the image needs no libc.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERSION "slimkube-pause-1"

static void on_terminate(int signo) {
    (void)signo;
    _exit(0);
}

static void on_child(int signo) {
    (void)signo;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && (strcmp(argv[1], "-v") == 0 || strcmp(argv[1], "--version") == 0)) {
        printf("%s\n", VERSION);
        return 0;
    }
    if (getpid() != 1) {
        fprintf(stderr, "pause: warning: not running as PID 1\n");
    }

    struct sigaction term = {.sa_handler = on_terminate};
    sigemptyset(&term.sa_mask);
    struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
    sigemptyset(&child.sa_mask);
    if (sigaction(SIGINT, &term, NULL) < 0 || sigaction(SIGTERM, &term, NULL) < 0 ||
        sigaction(SIGCHLD, &child, NULL) < 0) {
        perror("pause: sigaction");
        return 1;
    }
    for (;;) {
        pause();
    }
}
