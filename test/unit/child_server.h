/* child_server.h - a test's HTTP server in a child process (the store's
 * synchronous calls run a private loop, so the server cannot share the
 * test's): child_server_start() forks; the child stops itself after secs
 * seconds (alarm: it never outlives a test that failed before stopping
 * it), calls setup(b, arg) to set up on its own loop b, which gives the
 * port it listens on (-1: none), sends the port back through a pipe and
 * serves until killed. The parent gets the child's pid and *port, or -1
 * (and no child left). child_server_stop() kills and reaps it (a pid <= 0
 * is nothing). kubeconfig_write() writes a kubeconfig at path naming
 * http://127.0.0.1:PORT, no credentials. Header-only (static inline),
 * for test files. */
#ifndef SC_TEST_CHILD_SERVER_H
#define SC_TEST_CHILD_SERVER_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <event2/event.h>

typedef int child_server_listen(struct event_base *b, void *arg);

static inline void child_server_stop(pid_t pid)
{
  if(pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
}

static inline pid_t child_server_start(child_server_listen *setup,
                                       void *arg, unsigned secs, int *port)
{
  int fds[2];
  pid_t pid;
  if(pipe(fds))
    return -1;
  pid = fork();
  if(pid == 0) {
    struct event_base *b = event_base_new();
    int pt = -1;
    alarm(secs);
    close(fds[0]);
    if(b)
      pt = setup(b, arg);
    if(write(fds[1], &pt, sizeof(pt)) != (ssize_t)sizeof(pt))
      _exit(1);
    close(fds[1]);
    event_base_dispatch(b);
    _exit(0);
  }
  close(fds[1]);
  if(pid < 0 || read(fds[0], port, sizeof(*port)) != (ssize_t)sizeof(*port) ||
     *port <= 0) {
    close(fds[0]);
    child_server_stop(pid);
    return -1;
  }
  close(fds[0]);
  return pid;
}

static inline int kubeconfig_write(const char *path, int port)
{
  FILE *f = fopen(path, "w");
  if(!f)
    return -1;
  fprintf(f, "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n"
          "- name: t\n  cluster: {server: \"http://127.0.0.1:%d\"}\n"
          "contexts:\n- name: t\n  context: {cluster: t, user: u}\nusers:\n"
          "- name: u\n  user: {}\n", port);
  return fclose(f) ? -1 : 0;
}

#endif
