/* Helper programs run as children that may crash or hang (hc_run_helper):
 * the plugin probe (probe.c) and libhc-mpi's CUDA check. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* Appends what the child has written so far to *out (NUL-terminated). */
static void drain(int fd, char **out, size_t *len, size_t *cap) {
  char chunk[4096];
  for (;;) {
    ssize_t r = read(fd, chunk, sizeof chunk);
    if (r <= 0) return;
    if (*len + (size_t)r + 1 > *cap) {
      size_t nc = *cap ? *cap * 2 : 8192;
      while (nc < *len + (size_t)r + 1) nc *= 2;
      char *nb = realloc(*out, nc);
      if (!nb) return; /* the report is cut short; the child still ends */
      *out = nb;
      *cap = nc;
    }
    memcpy(*out + *len, chunk, (size_t)r);
    *len += (size_t)r;
    (*out)[*len] = '\0';
  }
}

HC_API hc_status_t hc_run_helper(char *const argv[], char *const envp[], int report_fd, double limit_s, char **report,
                                 int *status, int *timed_out) {
  if (!argv || !argv[0] || report_fd < 1 || report_fd > 9 || !report || !status || !timed_out)
    return hc_error(HC_ERR_INVALID_ARG, "hc_run_helper: bad argument");
  *report = NULL;
  *status = 0;
  *timed_out = 0;
  /* Checked first: where posix_spawn forks (under valgrind, say), a
   * program that cannot be run only shows as its child's exit 127. */
  if (access(argv[0], X_OK) != 0) return hc_error(HC_ERR_IO, "cannot run %s: %s", argv[0], strerror(errno));
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) return hc_error(HC_ERR_IO, "cannot run %s: pipe: %s", argv[0], strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], report_fd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  /* Its own process group: a hung helper and anything it started are
   * killed together. */
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid;
  int err = posix_spawn(&pid, argv[0], &fa, &attr, argv, envp ? envp : environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(pfd[1]);
  if (err != 0) {
    close(pfd[0]);
    return hc_error(HC_ERR_IO, "cannot run %s: %s", argv[0], strerror(err));
  }
  fcntl(pfd[0], F_SETFL, O_NONBLOCK);
  size_t len = 0, cap = 0;
  const double t0 = hc_now();
  hc_status_t st = HC_OK;
  for (;;) {
    drain(pfd[0], report, &len, &cap);
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) break;
    const int lost = r < 0 && errno != EINTR;
    if (lost || hc_now() - t0 > limit_s) {
      if (lost) st = hc_error(HC_ERR_IO, "%s: waitpid: %s", argv[0], strerror(errno));
      *timed_out = !lost;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, status, 0);
      break;
    }
    struct pollfd p = {pfd[0], POLLIN, 0};
    poll(&p, 1, 20);
  }
  drain(pfd[0], report, &len, &cap);
  close(pfd[0]);
  return st;
}
