/* Every HC_* environment variable hc reads: one X-macro list, read through
 * include/hc/config.h (config.c). docs/env.md documents the PUBLIC and
 * TUNING entries; tests/unit/test_config.c checks that it names each of
 * them with its default and nothing else.
 *
 * X(name, type, scope, default, min, max, names, doc)
 *   type   STRING BOOL INT SIZE DOUBLE CHOICE SHAPE (hc_config_type_t)
 *   scope  PUBLIC TUNING INTERNAL (hc_config_scope_t)
 *   default as the variable spells it; NULL when computed (doc says how) */
#ifndef HC_CONFIG_VARS_H
#define HC_CONFIG_VARS_H

#define HC_CONFIG_VARS(X)                                                                                           \
  /* core/runtime */                                                                                                \
  X(HC_PLUGIN_PATH, STRING, PUBLIC, NULL, 0, 0, NULL,                                                               \
    "colon-separated plugin directories, searched after --plugin-dir and before the install directory")             \
  X(HC_LOG, INT, PUBLIC, NULL, 0, 3, "error=0|warn=1|info=2|debug=3",                                               \
    "log to stderr from this level up (unset: no log unless the program asks for one)")                             \
  X(HC_CACHE, BOOL, PUBLIC, "1", 0, 0, NULL, "0 turns the on-disk kernel cache off")                                \
  X(HC_CACHE_DIR, STRING, PUBLIC, NULL, 0, 0, NULL,                                                                 \
    "the kernel cache's directory (unset: $XDG_CACHE_HOME/hc, else ~/.cache/hc)")                                   \
  X(HC_PLUGIN_PROBE, BOOL, PUBLIC, "1", 0, 0, NULL,                                                                 \
    "0 loads plugins without first trying each in a child process (hc-plugin-scanner)")                             \
  X(HC_PLUGIN_PROBE_TIMEOUT, DOUBLE, PUBLIC, "10", 0.001, 3600, NULL,                                               \
    "seconds a plugin's probe may take before the plugin is rejected as hung")                                      \
  X(HC_PLUGIN_SCANNER, STRING, INTERNAL, NULL, 0, 0, NULL,                                                          \
    "the probe program (unset: hc/hc-plugin-scanner beside libhc)")                                                 \
  X(HC_HOST_PINNED, BOOL, TUNING, "1", 0, 0, NULL,                                                                  \
    "0: hc_host_alloc (halo staging) gives ordinary host memory, not the backend's page-locked memory")             \
  X(HC_HOST_PIN_AFTER, INT, TUNING, "2", 0, 1000000, NULL,                                                          \
    "a cpu buffer of 4 MiB or more is page-locked for the GPU it is handed over to (backends that can: cuda) "      \
    "at its Nth hand-over, so that later ones skip the staging copy; 0: never")                                     \
  X(HC_HOST_CACHE, SIZE, TUNING, "512M", 0, 1e18, NULL,                                                             \
    "freed cpu buffers that had been handed over to or from a GPU are kept, up to this many bytes per device, "     \
    "for the next buffer of their size (pages in, still page-locked); 0: none")                                     \
  X(HC_KERNEL_OPTIONS, STRING, TUNING, NULL, 0, 0, NULL,                                                            \
    "appended to every source kernel's build options (e.g. -DBPM_XSUB=3); part of the cache key")                   \
  /* core/partition */                                                                                              \
  X(HC_GATHER_MAX, SIZE, PUBLIC, NULL, 1, 1e18, NULL,                                                               \
    "a split over processes (MPI) gathers an output on rank 0 up to this size; larger ones are written in place "   \
    "(MPI-IO) (unset: a quarter of the host's memory)")                                                             \
  X(HC_SPLIT_PEER, BOOL, TUNING, "1", 0, 0, NULL,                                                                   \
    "0: halos between parts of one process always go through host memory, not the backend's peer copy")             \
  X(HC_SPLIT_OVERLAP, CHOICE, TUNING, "auto", 0, 0, "auto|on|off",                                                  \
    "whether a split run's parts overlap their halo exchanges with computation (jacobi): auto on GPUs and "         \
    "accelerators whose halos go through host memory, not on cpu devices or between peers")                         \
  X(HC_SPLIT_REBALANCE, CHOICE, TUNING, "auto", 0, 0, "auto|on|off|always",                                         \
    "whether rows move between neighbouring parts of a split while they run, to follow the parts' measured speed "  \
    "(jacobi, multigrid): auto when every part's device is of one backend (the result stays bit for bit the "       \
    "same) and a move promises 10 % and pays for itself, on also across backends, always at every comparison the "  \
    "measured shares differ (across backends too, whatever the gain), off keeps the planned rows")                  \
  X(HC_SPLIT_DRIVER_CORES, INT, TUNING, "1", 0, 64, NULL,                                                           \
    "cores a split run in one process leaves to the thread that drives each of its parts on a GPU or accelerator: " \
    "the cpu backend's part runs on that many fewer of its threads (0: none)")                                      \
  /* backends */                                                                                                    \
  X(HC_CPU_THREADS, INT, PUBLIC, NULL, 1, 1024, NULL,                                                               \
    "threads of the cpu backend (unset: one per core the process may run on)")                                      \
  X(HC_CPU_DEVICES, INT, PUBLIC, "1", 1, 64, NULL,                                                                  \
    "the cpu backend shows the host as this many devices, each with its share of the threads (docs/partition.md)")  \
  X(HC_CPU_PIN, BOOL, PUBLIC, "1", 0, 0, NULL,                                                                      \
    "with several cpu devices, each device's worker threads stay on its own cores (its share, in order, of the "    \
    "cores the process may use; the first for the thread that drives its part of a split run) when there are "      \
    "enough; 0: not pinned")                                                                                        \
  X(HC_CPU_HUGE_PAGES, BOOL, PUBLIC, "1", 0, 0, NULL,                                                               \
    "cpu device buffers of 4 MiB and more are aligned to 2 MiB and asked to be backed by transparent huge pages "   \
    "(fewer page faults when a new buffer is first written, fewer TLB misses in large grids; a kernel that "        \
    "compacts memory to find them may make a first write wait); 0: ordinary pages")                                 \
  X(HC_OPENCL_PLATFORM, STRING, PUBLIC, NULL, 0, 0, NULL,                                                           \
    "only OpenCL platforms whose name contains this text (case-insensitive)")                                       \
  X(HC_CUDA_DRIVER, STRING, PUBLIC, "libcuda.so.1", 0, 0, NULL, "the CUDA driver library the cuda backend loads")   \
  X(HC_NVRTC, STRING, PUBLIC, NULL, 0, 0, NULL,                                                                     \
    "the NVRTC library (unset: libnvrtc.so.13, .12, libnvrtc.so, then the CUDA toolkit's)")                         \
  X(HC_CUDA_STAGING, SIZE, TUNING, "16M", 0, 1099511627776.0, "off=0|on=1",                                         \
    "host transfers from this size up go through pinned staging buffers (0: never, 1: always); the buffers (2 x "   \
    "`HC_CUDA_STAGE_CHUNK` of page-locked memory) are made by a thread started when the device opens, and "         \
    "transfers go direct until they are there")                                                                     \
  X(HC_CUDA_STAGE_CHUNK, SIZE, TUNING, "16M", 4096, 1073741824.0, NULL, "bytes per staging buffer")                 \
  X(HC_CUDA_STAGE_THREADS, INT, TUNING, NULL, 1, 64, NULL,                                                          \
    "threads copying through the staging buffers (unset: half the cores, at most 8)")                               \
  /* hcrun */                                                                                                       \
  X(HC_MPI, CHOICE, PUBLIC, "auto", 0, 0, "auto|on|off",                                                            \
    "hcrun under MPI (libhc-mpi, docs/mpi.md): auto when an MPI launcher started it, on, or off (one process)")     \
  X(HC_MPI_PIN, BOOL, PUBLIC, "0", 0, 0, NULL,                                                                      \
    "1: MPI ranks of a node that share its cores (each with its run of them, docs/mpi.md) are pinned there; 0: "    \
    "the system places their threads")                                                                              \
  X(HC_MPI_CUDA_AWARE, BOOL, PUBLIC, "0", 0, 0, NULL,                                                               \
    "1: halos in CUDA memory go to MPI in place, once a check shows that MPI takes it (docs/mpi.md)")               \
  X(HC_MPI_CUDA_CHECK, STRING, INTERNAL, NULL, 0, 0, NULL,                                                          \
    "the program that checks it (unset: hc/hc-mpi-cuda-check beside libhc-mpi)")                                    \
  /* libhc-grid */                                                                                                  \
  X(HC_GRID_CC, STRING, PUBLIC, "cc", 0, 0, NULL, "the C compiler of grid expressions' host kernels")               \
  X(HC_GRID_CFLAGS, STRING, TUNING, NULL, 0, 0, NULL,                                                               \
    "extra flags for HC_GRID_CC (at most 8, e.g. -march=native); part of the cache key")                            \
  X(HC_GRID_STENCIL, SHAPE, TUNING, NULL, 1, 1024, NULL,                                                            \
    "work-group and planes per item of device stencil kernels; unset: the device's row of the grid tuning table "   \
    "(core/grid/grid_schedule.c)")                                                                                  \
  X(HC_GRID_POINT, SHAPE, TUNING, NULL, 1, 1024, NULL,                                                              \
    "work-group and planes per item of 3-D pointwise device kernels; unset: the device's tuning row")               \
  X(HC_GRID_VECTOR, SHAPE, TUNING, NULL, 1, 1024, "off",                                                            \
    "work-group and planes per item of vector kernels; off: one cell per item; unset: the device's tuning row")     \
  X(HC_GRID_PLANE_ORDER, CHOICE, TUNING, NULL, 0, 0, "alternate|forward",                                           \
    "plane order of successive 3-D device assignments; forward keeps it ascending; unset: the device's tuning row") \
  /* workloads */                                                                                                   \
  X(HC_MG_SPLIT_MIN_POINTS, INT, TUNING, NULL, 1, 1e15, NULL,                                                       \
    "multigrid split over a device set: a level is split while the split spares every part at least this many "     \
    "of the level's points (the level's less its slab's); coarser levels run whole on every part, without "         \
    "exchanges; unset: while the split is measured to pay, after the warm-up cycle")

#endif
