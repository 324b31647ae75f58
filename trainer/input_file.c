/* trainer/input_file.c: regular input files only, input text in messages (see input_file.h). */
#include "config.h"

#include "trainer/input_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/status.h"

int input_file_open(const char *path, const char *cannot_open, int *fd, off_t *size, char *err, size_t errlen)
{
  struct stat st;
  /* O_NONBLOCK: opening a FIFO without a writer returns at once */
  *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (*fd < 0 || fstat(*fd, &st) != 0) {
    snprintf(err, errlen, "%s: %s", path, cannot_open);
  } else if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: a %s, not a regular file (put the file itself there)", path,
             S_ISDIR(st.st_mode) ? "directory" : S_ISFIFO(st.st_mode) ? "FIFO" : "device or socket");
  } else {
    *size = st.st_size;
    return DLPAR_OK;
  }
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
  return DLPAR_ERR_INPUT;
}

int input_file_check(const char *path, const char *cannot_open, char *err, size_t errlen)
{
  off_t size;
  int fd, rc = input_file_open(path, cannot_open, &fd, &size, err, errlen);
  if (rc == DLPAR_OK)
    close(fd);
  return rc;
}

const char *input_printable(const char *text, char *buf, size_t len)
{
  size_t used = 0;
  if (len < 8) /* room for one escape and "..." */
    return len ? (*buf = '\0', buf) : buf;
  for (; *text && used + 8 <= len; text++) {
    const unsigned char c = (unsigned char)*text;
    if (c == '\n' || c == '\t' || c == '\r')
      used += (size_t)snprintf(buf + used, len - used, "\\%c", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
    else if (c < 0x20 || c == 0x7f)
      used += (size_t)snprintf(buf + used, len - used, "\\x%02x", c);
    else
      buf[used++] = (char)c;
  }
  snprintf(buf + used, len - used, "%s", *text ? "..." : "");
  return buf;
}
