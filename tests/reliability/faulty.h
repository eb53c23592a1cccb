/* The fault-injecting backend (faulty_backend.c) for the reliability
 * tests: compiled into a plugin at run time, put on the search path before
 * the test's context exists, and its controls found through dlsym. */
#ifndef HC_TEST_FAULTY_H
#define HC_TEST_FAULTY_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "harness.h"

/* hc_faulty_arm(op, k): the k-th call of op from now fails (op NULL:
 * none); hc_faulty_live(): buffers, kernels and devices not given back;
 * hc_faulty_calls(op): calls of op since the last arm. */
static void (*faulty_arm)(const char *, long);
static long (*faulty_live)(void);
static void (*faulty_slow)(double); /* every launch takes this much longer */
static long (*faulty_calls)(const char *);
/* hc_faulty_host(offset, fail): host_alloc's memory from now is offset
 * bytes past a 64-byte boundary, or host_alloc fails; returns its calls
 * since the last call. */
static long (*faulty_host)(long, int);

static char faulty_dir[4200];

/* A CUnit suite init: compiles the backend into a directory and puts it
 * and the test plugins on HC_PLUGIN_PATH. */
static int faulty_setup(void) {
  snprintf(faulty_dir, sizeof faulty_dir, "%s/faulty", th_tmpdir());
  mkdir(faulty_dir, 0755);
  char cmd[16384], err[8192];
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 -O1 -shared -fPIC -fvisibility=hidden -I%s/include -o %s/backend-faulty.so "
           "%s/tests/reliability/faulty_backend.c -L%s/lib -lhc",
           HC_SOURCE_DIR, faulty_dir, HC_SOURCE_DIR, th_build_dir());
  if (th_run(cmd, NULL, 0, err, sizeof err) != 0) {
    fprintf(stderr, "compiling the faulty backend failed: %s\n", err);
    return 1;
  }
  char path[8500];
  snprintf(path, sizeof path, "%s:%s/test-plugins", faulty_dir, th_build_dir());
  setenv("HC_PLUGIN_PATH", path, 1);
  return 0;
}

/* Finds the controls in the plugin the context loaded; 0 if it is not. */
static int faulty_bind(void) {
  if (faulty_arm) return 1;
  char so[4300];
  snprintf(so, sizeof so, "%s/backend-faulty.so", faulty_dir);
  void *h = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return 0;
  faulty_arm = (void (*)(const char *, long))dlsym(h, "hc_faulty_arm");
  faulty_live = (long (*)(void))dlsym(h, "hc_faulty_live");
  faulty_calls = (long (*)(const char *))dlsym(h, "hc_faulty_calls");
  faulty_slow = (void (*)(double))dlsym(h, "hc_faulty_slow");
  faulty_host = (long (*)(long, int))dlsym(h, "hc_faulty_host");
  dlclose(h); /* the context keeps it loaded */
  return faulty_arm && faulty_live && faulty_calls && faulty_slow && faulty_host;
}

#endif
