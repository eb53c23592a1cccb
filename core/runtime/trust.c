/* Trusted paths: what hc loads or takes as its own record (plugin
 * directories, the kernel cache, the plugin registry) must belong to the
 * user and be writable by nobody else, as ssh demands of its keys: a
 * directory or file that another user can write lets that user put code
 * into this process.
 *
 * The rule, one function for all: the object is owned by the effective
 * user or by root, and it is not writable by group or others. Directories
 * hc creates for itself are made 0700. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int hc__stat_trusted(const struct stat *st, const char *path, char *why, size_t n) {
  uid_t me = geteuid();
  if (st->st_uid != me && st->st_uid != 0) {
    snprintf(why, n, "%s is owned by uid %ld, not by this user (uid %ld) or root", path, (long)st->st_uid, (long)me);
    return 0;
  }
  if (st->st_mode & (S_IWGRP | S_IWOTH)) {
    snprintf(why, n, "%s is writable by %s (mode %04o)", path, (st->st_mode & S_IWOTH) ? "others" : "its group",
             (unsigned)(st->st_mode & 07777));
    return 0;
  }
  return 1;
}

int hc__dir_trusted(const char *path, int follow, char *why, size_t n) {
  struct stat st;
  if ((follow ? stat(path, &st) : lstat(path, &st)) != 0) {
    snprintf(why, n, "%s: %s", path, strerror(errno));
    return 0;
  }
  if (S_ISLNK(st.st_mode)) {
    snprintf(why, n, "%s is a symbolic link", path);
    return 0;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(why, n, "%s is not a directory", path);
    return 0;
  }
  return hc__stat_trusted(&st, path, why, n);
}

int hc__mkdir_private(const char *path, char *why, size_t n) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
    snprintf(why, n, "%.200s...: path too long", path);
    return -1;
  }
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p) continue;
    char c = *p;
    *p = '\0';
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
      snprintf(why, n, "cannot create %s: %s", buf, strerror(errno));
      return -1;
    }
    *p = c;
    if (!c) break;
  }
  /* The directory itself may be reached through a link the user made
   * (~/.cache -> /data/cache): what it resolves to is what must be private. */
  return hc__dir_trusted(path, 1, why, n) ? 0 : -1;
}

int hc__open_trusted(const char *path, char *why, size_t n) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP) {
      snprintf(why, n, "%s is a symbolic link", path);
      return -2;
    }
    snprintf(why, n, "%s: %s", path, strerror(e));
    errno = e;
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, n, "%s is not a regular file", path);
    close(fd);
    return -2;
  }
  if (!hc__stat_trusted(&st, path, why, n)) {
    close(fd);
    return -2;
  }
  /* Blocking reads from here on: it is a regular file. */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}
