/* hello: prints its arguments and exits with 7 (exectest checks both). */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  printf("hello: pid %d argc %d", (int)getpid(), argc);
  for (int i = 1; i < argc; i++)
    printf(" [%s]", argv[i]);
  printf("\n");
  return 7;
}
