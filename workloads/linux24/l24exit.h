/* l24exit.h: how an init of a Linux 2.4 image stops the machine, shared by
 * l24tasks.c and l24web.c.  QEMU's isa-debug-exit device at port 0xf4 ends
 * the emulator (code 0 there is QEMU's exit status 1); the console's last
 * lines are drained first, so the runner reads them before QEMU stops.
 * QEMU shuts down from its main loop a moment after the write, while the
 * guest runs on for as long as the host takes: init prints nothing after
 * it, so that every run's console ends at the same byte. */
#ifndef L24EXIT_H
#define L24EXIT_H

#include <stdio.h>
#include <sys/io.h>
#include <termios.h>
#include <unistd.h>

#define DEBUG_EXIT_PORT 0xf4

static void machine_exit(void)
{
  fflush(stdout);
  tcdrain(STDOUT_FILENO);
  if (ioperm(DEBUG_EXIT_PORT, 4, 1) == 0)
    outl(0, DEBUG_EXIT_PORT);
  else
    printf("init: could not reach the exit port\n");
  for (;;)
    pause();
}

#endif
