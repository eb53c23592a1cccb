/* Opening a file the user named, for reading, without ever blocking on it:
 * a FIFO, a device or a socket named as an input, a plugin or a pipeline
 * file would otherwise hang the reader (open() of a FIFO waits for a
 * writer). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static const char *kind_of(mode_t m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
                       : "not a regular file";
}

HC_API hc_status_t hc_open_regular(const char *path, int *fd_out) {
  if (!path || !fd_out) return hc_error(HC_ERR_INVALID_ARG, "hc_open_regular: NULL argument");
  *fd_out = -1;
  /* O_NONBLOCK: the open itself returns at once whatever the file is; it
   * changes nothing for the reads of a regular file. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    return hc_error(e == EIO ? HC_ERR_IO : HC_ERR_INVALID_ARG, "%s: cannot open: %s", path,
                    e == ELOOP ? "symlink loop" : strerror(e));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return hc_error(HC_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return hc_error(HC_ERR_INVALID_ARG, "%s: %s, not a regular file", path, kind_of(sb.st_mode));
  }
  /* Back to blocking reads, as every reader expects of a regular file. */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *fd_out = fd;
  return HC_OK;
}

HC_API hc_status_t hc_fopen_regular(const char *path, FILE **out) {
  if (!out) return hc_error(HC_ERR_INVALID_ARG, "hc_fopen_regular: NULL argument");
  *out = NULL;
  int fd;
  hc_status_t st = hc_open_regular(path, &fd);
  if (st != HC_OK) return st;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    close(fd);
    return hc_error(HC_ERR_NO_MEMORY, "%s: %s", path, strerror(e));
  }
  *out = f;
  return HC_OK;
}
