/* A client that never reads, for the tests of back-pressure (tests/web).
 *
 * Usage: noread HOST PORT < request
 *
 * Connects to HOST:PORT with a receive buffer of RCVBUF bytes set before
 * the connect, so that the kernel advertises a small window of our own
 * and never grows it (setting SO_RCVBUF turns off receive autotuning):
 * the server sees back-pressure after a few KiB, whatever the machine's
 * tcp_rmem allows. Node's net cannot set SO_RCVBUF before it connects,
 * hence this program. It sends stdin as the request, prints "sent" on
 * stdout, then reads nothing, ever, until it is killed; it dies with its
 * parent (PR_SET_PDEATHSIG), so a test that crashes leaves none behind.
 * Exit 111 when it cannot connect or send. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define RCVBUF 4096

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: noread HOST PORT < request\n");
    return 100;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1)
    return 111; /* the parent is gone already */
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
  int err = getaddrinfo(argv[1], argv[2], &hints, &ai);
  if (err) {
    fprintf(stderr, "noread: %s:%s: %s\n", argv[1], argv[2], gai_strerror(err));
    return 111;
  }
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int size = RCVBUF;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size) ||
      connect(fd, ai->ai_addr, ai->ai_addrlen)) {
    fprintf(stderr, "noread: connect %s:%s: %s\n", argv[1], argv[2], strerror(errno));
    return 111;
  }
  freeaddrinfo(ai);
  char buf[65536];
  ssize_t n;
  while ((n = read(0, buf, sizeof buf)) > 0)
    for (ssize_t off = 0; off < n;) {
      ssize_t w = send(fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
      if (w < 0) {
        fprintf(stderr, "noread: send: %s\n", strerror(errno));
        return 111;
      }
      off += w;
    }
  printf("sent\n");
  fflush(stdout);
  for (;;)
    pause();
}
