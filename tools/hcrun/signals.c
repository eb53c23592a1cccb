/* hcrun: SIGINT and SIGTERM. The handler removes the library's temporary
 * files in progress (hc_remove_temporaries), says which outputs were
 * written completely, and exits 128 + the signal (130, 143), as a shell
 * reports a command killed by it. Only async-signal-safe calls in the
 * handler: write(), unlink() inside the library, _exit(). */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "hcrun.h"

#define MAX_WRITTEN 256
#define PATH_CAP 4200

static char written[MAX_WRITTEN][PATH_CAP];
static _Atomic int nwritten;

void hcrun_note_written(const char *path) {
  int i = atomic_load(&nwritten);
  if (i >= MAX_WRITTEN) return;
  size_t n = strlen(path);
  if (n >= PATH_CAP) n = PATH_CAP - 1;
  memcpy(written[i], path, n);
  written[i][n] = '\0';
  atomic_store(&nwritten, i + 1);
}

static void say(const char *s) {
  size_t n = strlen(s);
  while (n) {
    ssize_t w = write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

static volatile sig_atomic_t quiet;

void hcrun_signals_quiet(void) { quiet = 1; }

static void on_signal(int sig) {
  hc_remove_temporaries();
  if (quiet) _exit(128 + sig);
  say(sig == SIGINT ? "\nhcrun: interrupted (SIGINT)" : "\nhcrun: terminated (SIGTERM)");
  say("; temporary files removed\n");
  int n = atomic_load(&nwritten);
  if (n == 0) say("hcrun: no output was written\n");
  for (int i = 0; i < n; i++) {
    say("hcrun: wrote ");
    say(written[i]);
    say("\n");
  }
  _exit(128 + sig);
}

void hcrun_install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  static const int sigs[2] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; i++) {
    struct sigaction old;
    /* a signal the parent ignored (nohup, a background job) stays ignored */
    if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(sigs[i], &sa, NULL);
  }
}
