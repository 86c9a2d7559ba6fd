/* A stand-in for the libraries artifacts link (the OpenMP runtime, OpenBLAS): loading it starts a
 * worker thread that wakes every millisecond until the process exits. If the library were
 * unloaded under it, the thread's next wake-up would run unmapped code and crash the process. */
#include <pthread.h>
#include <unistd.h>

static void *kiln_fake_pool_worker(void *arg) {
  (void)arg;
  for (;;)
    usleep(1000);
  return 0;
}

__attribute__((constructor)) static void kiln_fake_pool_start(void) {
  pthread_t thread;
  if (pthread_create(&thread, 0, kiln_fake_pool_worker, 0) == 0)
    pthread_detach(thread);
}

int kiln_fake_pool_size(void) { return 1; }
