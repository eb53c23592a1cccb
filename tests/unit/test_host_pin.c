/* cpu buffers handed over to a device of its own memory (core/runtime/
 * host_pin.c): page-locked for it at the HC_HOST_PIN_AFTER-th hand-over,
 * unlocked once before their memory is freed, and kept after destroy for
 * the next buffer of their size (HC_HOST_CACHE). The device is the serial
 * test backend with HC_TEST_SERIAL_MEMORY=cuda, whose memory stands in for
 * a GPU's and which records what it is asked to page-lock, in the log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MIB ((size_t)1 << 20)
#define BYTES (6 * MIB) /* above the 4 MiB below which nothing is locked */

typedef struct {
  unsigned locked, unlocked, errors;
  size_t locked_bytes;
} lock_log_t;

static void on_log(void *user, hc_log_level_t level, const char *msg) {
  lock_log_t *l = user;
  size_t n = 0;
  if (level == HC_LOG_ERROR && strstr(msg, "serial:0")) l->errors++;
  if (sscanf(msg, "serial:0: page-locked %zu bytes", &n) == 1) {
    l->locked++;
    l->locked_bytes = n;
  }
  if (strncmp(msg, "serial:0: unlocked", 18) == 0) l->unlocked++;
}

typedef struct {
  hc_context_t *ctx;
  hc_device_t *cpu, *gpu;
  lock_log_t log;
} pair_t;

/* cpu:0 and serial:0 (memory like a GPU's), with HC_HOST_PIN_AFTER and
 * HC_HOST_CACHE as given (NULL: unset). */
static int open_pair(pair_t *p, const char *pin_after, const char *cache) {
  memset(p, 0, sizeof *p);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/test-plugins", th_build_dir());
  const char *dirs[] = {dir};
  hc_context_options_t o = {sizeof o, dirs, 1, 1, 0, on_log, &p->log, HC_LOG_DEBUG, NULL, NULL};
  setenv("HC_TEST_SERIAL_MEMORY", "cuda", 1);
  if (pin_after) setenv("HC_HOST_PIN_AFTER", pin_after, 1);
  if (cache) setenv("HC_HOST_CACHE", cache, 1);
  hc_status_t st = hc_context_create(&o, &p->ctx);
  uint32_t ci = 0, gi = 0;
  if (st == HC_OK) st = hc_device_find(p->ctx, "cpu:0", &ci);
  if (st == HC_OK) st = hc_device_find(p->ctx, "serial:0", &gi);
  if (st == HC_OK) st = hc_device_open(p->ctx, ci, &p->cpu);
  if (st == HC_OK) st = hc_device_open(p->ctx, gi, &p->gpu);
  unsetenv("HC_TEST_SERIAL_MEMORY");
  unsetenv("HC_HOST_PIN_AFTER");
  unsetenv("HC_HOST_CACHE");
  TH_ASSERT_OK(st);
  return st == HC_OK;
}

static void close_pair(pair_t *p) {
  hc_device_close(p->cpu);
  hc_device_close(p->gpu);
  hc_context_destroy(p->ctx);
  CU_ASSERT_EQUAL(p->log.locked, p->log.unlocked);
  CU_ASSERT_EQUAL(p->log.errors, 0);
}

/* One round trip of a new cpu buffer: the GPU's buffer into it, then it
 * into a second GPU buffer, checked byte for byte. Its host address. */
static void *round_trip(pair_t *p, unsigned char seed) {
  hc_buffer_t *g = NULL, *back = NULL, *h = NULL;
  unsigned char *in = malloc(BYTES), *out = malloc(BYTES);
  void *addr = NULL;
  CU_ASSERT_FATAL(in && out);
  for (size_t i = 0; i < BYTES; i++) in[i] = (unsigned char)(i * 7u + seed);
  TH_ASSERT_OK(hc_buffer_create(p->gpu, BYTES, &g));
  TH_ASSERT_OK(hc_buffer_create(p->gpu, BYTES, &back));
  TH_ASSERT_OK(hc_buffer_create(p->cpu, BYTES, &h));
  if (g && back && h) {
    addr = hc_buffer_host_ptr(h);
    TH_ASSERT_OK(hc_buffer_write(g, 0, in, BYTES));
    TH_ASSERT_OK(hc_buffer_copy(h, 0, g, 0, BYTES));
    TH_ASSERT_OK(hc_buffer_copy(back, 0, h, 0, BYTES));
    TH_ASSERT_OK(hc_buffer_read(back, 0, out, BYTES));
    CU_ASSERT(memcmp(in, out, BYTES) == 0);
  }
  hc_buffer_destroy(h);
  hc_buffer_destroy(back);
  hc_buffer_destroy(g);
  free(in);
  free(out);
  return addr;
}

static void test_second_handover_locks_and_the_buffer_is_kept(void) {
  pair_t p;
  if (!open_pair(&p, NULL, NULL)) return;
  void *first = round_trip(&p, 1); /* two hand-overs: locked at the second */
  CU_ASSERT_EQUAL(p.log.locked, 1);
  CU_ASSERT_EQUAL(p.log.locked_bytes, BYTES);
  CU_ASSERT_EQUAL(p.log.unlocked, 0); /* destroyed, but kept */
  void *second = round_trip(&p, 2);   /* the same memory, still locked */
  CU_ASSERT_PTR_EQUAL(first, second);
  CU_ASSERT_EQUAL(p.log.locked, 1);
  /* A buffer of another size is new, and the kept one stays kept. */
  hc_buffer_t *other = NULL;
  TH_ASSERT_OK(hc_buffer_create(p.cpu, BYTES + 4096, &other));
  CU_ASSERT_PTR_NOT_EQUAL(hc_buffer_host_ptr(other), first);
  hc_buffer_destroy(other);
  CU_ASSERT_EQUAL(p.log.unlocked, 0);
  close_pair(&p); /* unlocked once, when cpu:0 closes */
  CU_ASSERT_EQUAL(p.log.unlocked, 1);
}

static void test_first_handover_locks_nothing(void) {
  pair_t p;
  if (!open_pair(&p, "3", NULL)) return;
  round_trip(&p, 3); /* two hand-overs of the buffer */
  CU_ASSERT_EQUAL(p.log.locked, 0);
  round_trip(&p, 4); /* the kept buffer: its third */
  CU_ASSERT_EQUAL(p.log.locked, 1);
  close_pair(&p);
}

static void test_settings_turn_it_off(void) {
  pair_t p;
  if (!open_pair(&p, "0", "0")) return;
  void *a = round_trip(&p, 5);
  CU_ASSERT_PTR_NOT_NULL(a);
  CU_ASSERT_EQUAL(p.log.locked, 0);
  round_trip(&p, 6);
  CU_ASSERT_EQUAL(p.log.locked, 0);
  close_pair(&p);
  /* Locking without keeping: the buffer is unlocked when destroyed. */
  if (!open_pair(&p, "1", "0")) return;
  round_trip(&p, 7);
  CU_ASSERT_EQUAL(p.log.locked, 1);
  CU_ASSERT_EQUAL(p.log.unlocked, 1);
  close_pair(&p);
  /* Keeping without locking (what a backend without host_register gets). */
  if (!open_pair(&p, "0", NULL)) return;
  void *first = round_trip(&p, 8), *second = round_trip(&p, 9);
  CU_ASSERT_PTR_EQUAL(first, second);
  CU_ASSERT_EQUAL(p.log.locked, 0);
  close_pair(&p);
}

/* A cache too small for two: the older buffer goes (unlocked, freed) when
 * the newer is kept. */
static void test_the_oldest_kept_makes_room(void) {
  pair_t p;
  if (!open_pair(&p, "1", "8M")) return;
  hc_buffer_t *g = NULL, *a = NULL, *b = NULL;
  TH_ASSERT_OK(hc_buffer_create(p.gpu, BYTES, &g));
  TH_ASSERT_OK(hc_buffer_create(p.cpu, BYTES, &a));
  TH_ASSERT_OK(hc_buffer_create(p.cpu, BYTES - 4096, &b));
  if (g && a && b) {
    TH_ASSERT_OK(hc_buffer_copy(a, 0, g, 0, BYTES));
    TH_ASSERT_OK(hc_buffer_copy(b, 0, g, 0, BYTES - 4096));
  }
  CU_ASSERT_EQUAL(p.log.locked, 2);
  hc_buffer_destroy(a); /* kept */
  CU_ASSERT_EQUAL(p.log.unlocked, 0);
  hc_buffer_destroy(b); /* kept; a goes */
  CU_ASSERT_EQUAL(p.log.unlocked, 1);
  hc_buffer_destroy(g);
  close_pair(&p);
  CU_ASSERT_EQUAL(p.log.unlocked, 2);
}

/* The GPU closed first: the kept buffer holds it open until cpu:0 closes;
 * and a context destroyed with both devices still open frees it too. */
static void test_any_close_order(void) {
  pair_t p;
  if (!open_pair(&p, "1", NULL)) return;
  round_trip(&p, 8);
  hc_device_close(p.gpu);
  CU_ASSERT_EQUAL(p.log.unlocked, 0);
  hc_device_close(p.cpu);
  CU_ASSERT_EQUAL(p.log.unlocked, 1);
  hc_context_destroy(p.ctx);
  CU_ASSERT_EQUAL(p.log.errors, 0);
  if (!open_pair(&p, "1", NULL)) return;
  round_trip(&p, 9);
  hc_context_destroy(p.ctx); /* warns of the open devices, frees all */
  CU_ASSERT_EQUAL(p.log.locked, 1);
  CU_ASSERT_EQUAL(p.log.unlocked, 1);
  CU_ASSERT_EQUAL(p.log.errors, 0);
}

/* Buffers below 4 MiB, and hand-overs between two host devices, are left
 * alone. */
static void test_small_and_host_to_host_left_alone(void) {
  pair_t p;
  if (!open_pair(&p, "1", NULL)) return;
  hc_buffer_t *g = NULL, *h = NULL, *h2 = NULL;
  TH_ASSERT_OK(hc_buffer_create(p.gpu, MIB, &g));
  TH_ASSERT_OK(hc_buffer_create(p.cpu, MIB, &h));
  if (g && h) {
    TH_ASSERT_OK(hc_buffer_copy(h, 0, g, 0, MIB));
    TH_ASSERT_OK(hc_buffer_copy(g, 0, h, 0, MIB));
  }
  CU_ASSERT_EQUAL(p.log.locked, 0);
  hc_buffer_destroy(h);
  hc_buffer_destroy(g);
  TH_ASSERT_OK(hc_buffer_create(p.cpu, BYTES, &h));
  TH_ASSERT_OK(hc_buffer_create(p.cpu, BYTES, &h2));
  if (h && h2) TH_ASSERT_OK(hc_buffer_copy(h2, 0, h, 0, BYTES));
  CU_ASSERT_EQUAL(p.log.locked, 0);
  hc_buffer_destroy(h);
  hc_buffer_destroy(h2);
  close_pair(&p);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("host_pin", NULL, NULL);
  CU_add_test(s, "second hand-over locks, buffer kept", test_second_handover_locks_and_the_buffer_is_kept);
  CU_add_test(s, "first hand-over locks nothing", test_first_handover_locks_nothing);
  CU_add_test(s, "settings turn it off", test_settings_turn_it_off);
  CU_add_test(s, "any close order", test_any_close_order);
  CU_add_test(s, "the oldest kept makes room", test_the_oldest_kept_makes_room);
  CU_add_test(s, "small and host-to-host left alone", test_small_and_host_to_host_left_alone);
}

int main(int argc, char **argv) { return th_main(argc, argv, register_tests); }
