/* fileset.h: the web workload's static file set and request mix.
 *
 * In the spirit of WebBench's static mix, whose file tree is not
 * documented; we use the documented SPECweb96 set (workload-facts.md 2):
 * 4 size classes x 9 files, file j (1..9) of class c is
 * j * 1024 * 10^c / 10 bytes (102 B .. 900 KiB), requested 35 %, 50 %,
 * 14 % and 1 % of the time by class, uniformly within a class.  Every
 * byte is a function of the file and its offset (fileset_byte), so a
 * client verifies a response without reading the file; mkfileset.py
 * writes the same bytes into the image as /www/class<c>_<j>. */
#ifndef WEB_FILESET_H
#define WEB_FILESET_H

#include <stdint.h>

#define FILESET_CLASSES 4
#define FILESET_PER_CLASS 9
#define FILESET_FILES (FILESET_CLASSES * FILESET_PER_CLASS)

long fileset_size(int file);                 /* file = class * 9 + j - 1 */
void fileset_name(int file, char *buf, int n); /* "/www/class2_5" */
int fileset_lookup(const char *path);         /* -1 if not in the set */
static inline unsigned char fileset_byte(int file, long i)
{
  return (unsigned char)(file * 37 + i * 7 + (i >> 10));
}
/* A request: deterministic from the client's generator state. */
int fileset_pick(uint64_t *rng);
uint64_t fileset_rand(uint64_t *rng);

#endif
