/*
 * inplace-shim: the long-lived half of a container's shim, in C.
 *
 * The Python shim (inplace/node/shim/supervise.py) starts a container: it forks the workload,
 * which enters its sandbox, and goes through the start handshake with the node agent. What is
 * left after that is waiting, for the whole life of the container: the supervisor waits for
 * the workload and records how it ended, and the container's PID 1 (when it has its own PID
 * namespace) passes signals on and reaps orphans. A Python process doing that holds ~1.4 MiB
 * of its own pages; this program holds a few dozen KiB. The Python processes exec it, keeping
 * their pids (so the agent's records, its pidfds and an agent restarted later see the same
 * processes) and their children.
 *
 * Modes (argv[1]); descriptors are inherited, paths are the agent's:
 *
 *   wait PID EXIT_PATH
 *       The supervisor of a workload in the host's (or the pod's) PID namespace, its child:
 *       wait for it to end without reaping it, kill what is left of its process group (the
 *       pid cannot be reused before the reap), reap it, write EXIT_PATH.
 *   wait-init PID INIT_PID HOLD_FD STATUS_FD EXIT_PATH
 *       The supervisor of a workload under its own PID 1 (INIT_PID, its child): close HOLD_FD
 *       (the init may reap the workload now that the agent recorded it), wait for the init,
 *       read the workload's wait status it wrote to STATUS_FD, write EXIT_PATH.
 *   init WORKLOAD_PID HOLD_FD STATUS_FD
 *       PID 1 of a container's own PID namespace: pass every signal sent to PID 1 on to the
 *       workload (PID 1 gets only the signals it handles), reap what ends, and once HOLD_FD
 *       reads EOF and the workload is reaped, write its wait status to STATUS_FD and exit (the
 *       kernel then kills what is left in the namespace).
 *
 * EXIT_PATH holds the JSON the Python shim writes: {"pid", "exit_code", "signal",
 * "finished_at"}, written to EXIT_PATH.tmp and renamed over it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int parse_int(const char *text, int *out) {
    char *end;
    long value;
    errno = 0;
    value = strtol(text, &end, 10);
    if (errno || end == text || *end || value < 0 || value > 0x7fffffff) return -1;
    *out = (int)value;
    return 0;
}

static int usage(void) {
    static const char text[] =
        "usage: inplace-shim wait PID EXIT_PATH | wait-init PID INIT_PID HOLD_FD STATUS_FD "
        "EXIT_PATH | init WORKLOAD_PID HOLD_FD STATUS_FD\n";
    (void)!write(2, text, sizeof text - 1);
    return 2;
}

static void ignore_stop_signals(void) {
    /* The supervisor outlives the agent and must not die with its terminal or session. */
    int stops[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) signal(stops[i], SIG_IGN);
}

static pid_t wait_for(pid_t pid, int *status) {
    pid_t got;
    do got = waitpid(pid, status, 0);
    while (got < 0 && errno == EINTR);
    return got;
}

static int write_exit(const char *path, int pid, int status) {
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    int code = sig ? 128 + sig : WEXITSTATUS(status);
    struct timeval now;
    char tmp[4096], body[256], sigtext[16];
    gettimeofday(&now, NULL);
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return 1;
    if (sig) snprintf(sigtext, sizeof sigtext, "%d", sig);
    else strcpy(sigtext, "null");
    int len = snprintf(body, sizeof body,
                       "{\"pid\": %d, \"exit_code\": %d, \"signal\": %s, \"finished_at\": %ld.%06ld}",
                       pid, code, sigtext, (long)now.tv_sec, (long)now.tv_usec);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return 1;
    int ok = write(fd, body, len) == len;
    ok = (close(fd) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return 1;
    }
    return 0;
}

static int run_wait(int pid, const char *exit_path) {
    siginfo_t info;
    int status = SIGKILL; /* a workload that cannot be waited for is recorded as killed */
    ignore_stop_signals();
    int rc;
    do rc = waitid(P_PID, pid, &info, WEXITED | WNOWAIT);
    while (rc < 0 && errno == EINTR);
    kill(-pid, SIGKILL); /* what the workload left behind in its group, before the reap */
    if (wait_for(pid, &status) != pid) status = SIGKILL;
    return write_exit(exit_path, pid, status);
}

static int run_wait_init(int pid, int init_pid, int hold_fd, int status_fd,
                         const char *exit_path) {
    char text[32];
    int status = SIGKILL, got = 0, init_status;
    ignore_stop_signals();
    close(hold_fd);
    wait_for(init_pid, &init_status);
    for (;;) {
        ssize_t n = read(status_fd, text + got, sizeof text - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += n;
        if (got == (int)sizeof text - 1) break;
    }
    text[got] = 0;
    close(status_fd);
    if (got) parse_int(text, &status);
    return write_exit(exit_path, pid, status);
}

static volatile pid_t init_workload;

static void forward(int sig) {
    int saved = errno;
    kill(init_workload, sig);
    errno = saved;
}

static int run_init(int workload, int hold_fd, int status_fd) {
    struct sigaction action;
    char buffer[64];
    init_workload = workload;
    memset(&action, 0, sizeof action);
    action.sa_handler = forward;
    action.sa_flags = SA_RESTART;
    sigfillset(&action.sa_mask);
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD) continue;
        sigaction(sig, &action, NULL); /* the few the C library reserves refuse: fine */
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (;;) { /* the workload is not reaped before the agent recorded it */
        ssize_t n = read(hold_fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
    }
    close(hold_fd);
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            return 0; /* no children left */
        }
        if (pid == workload) {
            int len = snprintf(buffer, sizeof buffer, "%d", status);
            (void)!write(status_fd, buffer, len);
            return 0;
        }
    }
}

int main(int argc, char **argv) {
    int pid, init_pid, hold_fd, status_fd;
    if (argc == 4 && !strcmp(argv[1], "wait") && !parse_int(argv[2], &pid))
        return run_wait(pid, argv[3]);
    if (argc == 7 && !strcmp(argv[1], "wait-init") && !parse_int(argv[2], &pid) &&
        !parse_int(argv[3], &init_pid) && !parse_int(argv[4], &hold_fd) &&
        !parse_int(argv[5], &status_fd))
        return run_wait_init(pid, init_pid, hold_fd, status_fd, argv[6]);
    if (argc == 5 && !strcmp(argv[1], "init") && !parse_int(argv[2], &pid) &&
        !parse_int(argv[3], &hold_fd) && !parse_int(argv[4], &status_fd))
        return run_init(pid, hold_fd, status_fd);
    return usage();
}
