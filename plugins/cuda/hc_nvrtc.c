/* NVRTC loading and compilation (see hc_nvrtc.h). */
#include "hc_nvrtc.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_config.h"

#ifndef HC_CUDA_PATH
#define HC_CUDA_PATH "/usr/local/cuda"
#endif

#ifdef HC_NVRTC_CHECK_TYPES
/* Our prototypes must be the toolkit's: checked here, at compile time. The
 * build without nvrtc.h passes the result as int: same size, checked too. */
_Static_assert(sizeof(nvrtcResult) == sizeof(int), "nvrtcResult is not int-sized");
#define HC_NVRTC_CHECK_(ret, name, args) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) args), #name " differs from nvrtc.h");
HC_NVRTC_FUNCS(HC_NVRTC_CHECK_, HC_NVRTC_CHECK_)
#undef HC_NVRTC_CHECK_
#endif

static void *try_open(hc_nvrtc_t *n, const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return NULL;
  memset(n, 0, sizeof *n);
  int ok = 1;
#define HC_NVRTC_BIND_(ret, name, args)   \
  *(void **)&n->name = dlsym(lib, #name); \
  if (!n->name) ok = 0;
#define HC_NVRTC_BIND_O_(ret, name, args) *(void **)&n->name = dlsym(lib, #name);
  HC_NVRTC_FUNCS(HC_NVRTC_BIND_, HC_NVRTC_BIND_O_)
#undef HC_NVRTC_BIND_
#undef HC_NVRTC_BIND_O_
  if (!ok || n->nvrtcVersion(&n->major, &n->minor) != 0) {
    dlclose(lib); /* nothing of it has run yet: safe to close */
    memset(n, 0, sizeof *n);
    return NULL;
  }
  n->lib = lib;
  snprintf(n->path, sizeof n->path, "%.*s", (int)sizeof n->path - 1, path);
  int count = 0;
  if (n->nvrtcGetNumSupportedArchs && n->nvrtcGetSupportedArchs && n->nvrtcGetNumSupportedArchs(&count) == 0 &&
      count > 0 && count <= 64 && n->nvrtcGetSupportedArchs(n->archs) == 0)
    n->narchs = count;
  return lib;
}

int hc_nvrtc_load(hc_nvrtc_t *n, int max_major, char *why, size_t why_size) {
  char cands[6][512];
  int nc = 0;
  const char *env = NULL;
  hc_config_str("HC_NVRTC", &env);
  if (env)
    snprintf(cands[nc++], sizeof cands[0], "%s", env);
  else {
    snprintf(cands[nc++], sizeof cands[0], "libnvrtc.so.13");
    snprintf(cands[nc++], sizeof cands[0], "libnvrtc.so.12");
    snprintf(cands[nc++], sizeof cands[0], "libnvrtc.so");
    snprintf(cands[nc++], sizeof cands[0], "%s/lib64/libnvrtc.so", HC_CUDA_PATH);
  }
  hc_nvrtc_t fallback;
  int have_fallback = 0;
  for (int i = 0; i < nc; i++) {
    if (!try_open(n, cands[i])) continue;
    if (max_major <= 0 || n->major <= max_major) return 0;
    if (!have_fallback) {
      fallback = *n;
      have_fallback = 1;
    }
  }
  if (have_fallback) {
    *n = fallback;
    return 0;
  }
  memset(n, 0, sizeof *n);
  size_t len = (size_t)snprintf(why, why_size, "NVRTC not found (tried");
  for (int i = 0; i < nc && len < why_size; i++)
    len += (size_t)snprintf(why + len, why_size - len, "%s %s", i ? "," : "", cands[i]);
  if (len < why_size) snprintf(why + len, why_size - len, ")");
  return -1;
}

/* Splits options at blanks into a NULL-terminated vector; quotes group.
 * One allocation holds both the vector and the strings. */
static char **split_options(const char *opts, int reserve, int *argc) {
  size_t len = strlen(opts);
  size_t maxargs = len / 2 + 2 + (size_t)reserve;
  char **argv = malloc(maxargs * sizeof *argv + len + 1);
  if (!argv) return NULL;
  char *buf = (char *)(argv + maxargs), *w = buf;
  int n = reserve;
  const char *p = opts;
  while (*p) {
    while (*p && isspace((unsigned char)*p)) p++;
    if (!*p) break;
    argv[n++] = w;
    char quote = 0;
    for (; *p && (quote || !isspace((unsigned char)*p)); p++) {
      if (!quote && (*p == '"' || *p == '\''))
        quote = *p;
      else if (quote && *p == quote)
        quote = 0;
      else
        *w++ = *p;
    }
    *w++ = '\0';
  }
  argv[n] = NULL;
  *argc = n;
  return argv;
}

/* Moves the -D/-U options out of argv[first..] into #define/#undef lines
 * (returned, malloc'd) and compacts argv. Why: NVRTC applies command-line
 * macros before its implicitly included builtin header, so an innocent
 * -DT=128 (legal in OpenCL) rewrites that header's "template<typename T>"
 * and the build fails inside NVIDIA's code. As source lines they apply
 * from the program's first line on, as in OpenCL C. */
static char *take_defines(char **argv, int first, int *argc) {
  size_t cap = 1;
  for (int i = first; i < *argc; i++) cap += strlen(argv[i]) + 16;
  char *out = malloc(cap), *w = out;
  if (!out) return NULL;
  *w = '\0';
  int keep = first;
  for (int i = first; i < *argc; i++) {
    const char *a = argv[i], *name = NULL;
    int undef = 0;
    if (!strncmp(a, "-D", 2) || !strncmp(a, "-U", 2)) {
      undef = a[1] == 'U';
      name = a[2] ? a + 2 : (i + 1 < *argc ? argv[++i] : "");
    } else if (!strncmp(a, "--define-macro=", 15)) {
      name = a + 15;
    } else if (!strncmp(a, "--undefine-macro=", 17)) {
      name = a + 17;
      undef = 1;
    }
    if (!name) {
      argv[keep++] = argv[i];
      continue;
    }
    if (!*name) continue;
    const char *eq = strchr(name, '=');
    if (undef)
      w += sprintf(w, "#undef %s\n", name);
    else if (eq)
      w += sprintf(w, "#define %.*s %s\n", (int)(eq - name), name, eq + 1);
    else
      w += sprintf(w, "#define %s 1\n", name); /* -DNAME means 1, as in cc */
  }
  argv[keep] = NULL;
  *argc = keep;
  return out;
}

/* The target for compute capability cc: sm_<cc> when NVRTC knows it (or
 * cannot say), else PTX for the newest older one. 0 when none fits. */
static int choose_target(const hc_nvrtc_t *n, int cc, int *is_ptx) {
  *is_ptx = 0;
  if (!n->narchs) return cc;
  int best = 0;
  for (int i = 0; i < n->narchs; i++) {
    if (n->archs[i] == cc) return cc;
    if (n->archs[i] < cc && n->archs[i] > best) best = n->archs[i];
  }
  *is_ptx = best != 0;
  return best;
}

static char *get_log(const hc_nvrtc_t *n, hc_nvrtc_prog_t prog) {
  size_t size = 0;
  if (n->nvrtcGetProgramLogSize(prog, &size) != 0 || size == 0) return NULL;
  char *log = malloc(size + 1);
  if (!log) return NULL;
  if (n->nvrtcGetProgramLog(prog, log) != 0) log[0] = '\0';
  log[size] = '\0';
  /* Trim the trailing newlines and NULs NVRTC leaves. */
  size_t l = strlen(log);
  while (l && (log[l - 1] == '\n' || log[l - 1] == '\r')) log[--l] = '\0';
  return log;
}

hc_status_t hc_nvrtc_compile(const hc_nvrtc_t *n, int cc, const char *source, const char *options, void **image,
                             size_t *size, int *is_ptx, char **log) {
  *image = NULL;
  *size = 0;
  *is_ptx = 0;
  if (log) *log = NULL;
  if (!n || !n->lib) return hc_error(HC_ERR_BUILD, "NVRTC is not loaded");
  int ptx = 0;
  int target = choose_target(n, cc, &ptx);
  if (!target)
    return hc_error(HC_ERR_BUILD, "NVRTC %d.%d (%s) cannot compile for sm_%d (it supports sm_%d to sm_%d)", n->major,
                    n->minor, n->path, cc, n->archs[0], n->archs[n->narchs - 1]);
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", target);
  int argc = 0;
  char **argv = split_options(options ? options : "", 1, &argc);
  char *defines = argv ? take_defines(argv, 1, &argc) : NULL;
  size_t dlen = defines ? strlen(defines) : 0, slen = strlen(source);
  char *full = defines ? malloc(dlen + slen + 1) : NULL;
  if (!full) {
    free(argv);
    free(defines);
    return hc_error(HC_ERR_NO_MEMORY, "NVRTC: out of memory");
  }
  memcpy(full, defines, dlen);
  memcpy(full + dlen, source, slen + 1);
  free(defines);
  argv[0] = arch;
  hc_nvrtc_prog_t prog = NULL;
  hc_nvrtc_result_t r = n->nvrtcCreateProgram(&prog, full, "hc_kernel.cu", 0, NULL, NULL);
  if (r != 0) {
    free(argv);
    free(full);
    return hc_error(HC_ERR_BUILD, "nvrtcCreateProgram: %s", n->nvrtcGetErrorString(r));
  }
  r = n->nvrtcCompileProgram(prog, argc, (const char *const *)argv);
  free(argv);
  free(full);
  char *text = get_log(n, prog);
  hc_status_t st = HC_OK;
  if (r != 0) {
    st = hc_error(HC_ERR_BUILD, "NVRTC %d.%d compiling for %s_%d failed (%s):\n%s", n->major, n->minor,
                  ptx ? "compute" : "sm", target, n->nvrtcGetErrorString(r), text ? text : "(no log)");
  } else {
    size_t sz = 0;
    r = ptx ? n->nvrtcGetPTXSize(prog, &sz) : n->nvrtcGetCUBINSize(prog, &sz);
    char *img = r == 0 && sz ? malloc(sz) : NULL;
    if (!img)
      st = hc_error(HC_ERR_BUILD, "NVRTC produced no %s: %s", ptx ? "PTX" : "CUBIN",
                    r ? n->nvrtcGetErrorString(r) : "empty or out of memory");
    else if ((r = ptx ? n->nvrtcGetPTX(prog, img) : n->nvrtcGetCUBIN(prog, img)) != 0) {
      free(img);
      st = hc_error(HC_ERR_BUILD, "NVRTC: reading the %s: %s", ptx ? "PTX" : "CUBIN", n->nvrtcGetErrorString(r));
    } else {
      *image = img;
      *size = sz;
      *is_ptx = ptx;
    }
  }
  n->nvrtcDestroyProgram(&prog);
  if (log)
    *log = text;
  else
    free(text);
  return st;
}
