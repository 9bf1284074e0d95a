/*
 * qemu_plugin_api.h - our own declarations of the QEMU TCG plugin API,
 * version 5 (QEMU 10.1 and later; scripts/build-qemu.sh builds 10.2).
 *
 * We keep our own header rather than QEMU's qemu-plugin.h: it declares only
 * what busmon.c uses, needs no glib headers, and is written from the
 * documented prototypes (/work/shared/reference/qemu-plugin-facts.md and
 * qemu10-time-control-facts.md section 3).  The functions are left
 * unresolved in busmon.so; the dynamic linker binds them to the QEMU
 * executable when QEMU dlopen()s the plugin.
 *
 * Changes from version 1 that matter here: QEMU >= 9.0 refuses plugins
 * that declare version 1; qemu_plugin_insn_data() copies into a buffer
 * (version 3); version 5 can write guest memory.
 */
#ifndef QEMU_PLUGIN_API_H
#define QEMU_PLUGIN_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QEMU_PLUGIN_VERSION 5

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;

/* Only valid during qemu_plugin_install(). */
typedef struct qemu_info_t {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_hwaddr;

/* Packs MemOpIdx and the r/w bits; use only the helpers below on it. */
typedef uint32_t qemu_plugin_meminfo_t;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS = 0,
	QEMU_PLUGIN_CB_R_REGS = 1,
	QEMU_PLUGIN_CB_RW_REGS = 2,
};

enum qemu_plugin_mem_rw {
	QEMU_PLUGIN_MEM_R = 1,
	QEMU_PLUGIN_MEM_W = 2,
	QEMU_PLUGIN_MEM_RW = 3,
};

typedef void (*qemu_plugin_simple_cb_t)(qemu_plugin_id_t id);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id,
					     unsigned int vcpu_index);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index,
					    void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index,
					  qemu_plugin_meminfo_t info,
					  uint64_t vaddr, void *userdata);
/* A PC discontinuity (version 5): an interrupt, an exception, a host call. */
enum qemu_plugin_discon_type {
	QEMU_PLUGIN_DISCON_INTERRUPT = 1 << 0,
	QEMU_PLUGIN_DISCON_EXCEPTION = 1 << 1,
	QEMU_PLUGIN_DISCON_HOSTCALL = 1 << 2,
};
typedef void (*qemu_plugin_vcpu_discon_cb_t)(qemu_plugin_id_t id,
					     unsigned int vcpu_index,
					     enum qemu_plugin_discon_type type,
					     uint64_t from_pc, uint64_t to_pc);

/* The two symbols every plugin exports (defined in busmon.c). */
QEMU_PLUGIN_EXPORT extern int qemu_plugin_version;
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv);

/* Lifecycle. */
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *userdata);

void qemu_plugin_register_vcpu_discon_cb(qemu_plugin_id_t id,
					 enum qemu_plugin_discon_type type,
					 qemu_plugin_vcpu_discon_cb_t cb);

/* Translation. */
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
/* Copies up to len opcode bytes into dest; returns how many it copied
 * (translation callback only). */
size_t qemu_plugin_insn_data(const struct qemu_plugin_insn *insn,
			     void *dest, size_t len);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

/* Execution callbacks. */
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags,
					  void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags,
					    void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn,
				      qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags,
				      enum qemu_plugin_mem_rw rw,
				      void *userdata);

/* Memory-access queries (valid only inside the memory callback). */
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
/* The value a load read or a store wrote (version 4), widened by type. */
enum qemu_plugin_mem_value_type {
	QEMU_PLUGIN_MEM_VALUE_U8,
	QEMU_PLUGIN_MEM_VALUE_U16,
	QEMU_PLUGIN_MEM_VALUE_U32,
	QEMU_PLUGIN_MEM_VALUE_U64,
	QEMU_PLUGIN_MEM_VALUE_U128,
};
typedef struct {
	enum qemu_plugin_mem_value_type type;
	union {
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		struct {
			uint64_t low, high;
		} u128;
	} data;
} qemu_plugin_mem_value;
qemu_plugin_mem_value qemu_plugin_mem_get_value(qemu_plugin_meminfo_t info);
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info,
						  uint64_t vaddr);
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *haddr);
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *haddr);

/*
 * Writing guest state (version 5).  Call these only on a vCPU thread, i.e.
 * from an execution or memory callback: they act on the current vCPU's
 * address space.  QEMU does not order them against the guest's own
 * accesses in the same TB beyond "the guest's later loads see the data".
 *
 * The data travels in a glib GByteArray.  We do not include glib: the
 * type's public layout is two fields, a byte pointer and a length, and
 * QEMU only reads them for a write.  (The read calls below resize the
 * array with glib's allocator, so they are given glib's own array.)
 */
typedef struct qemu_plugin_bytes {
	uint8_t *data;
	unsigned int len;
} GByteArray;

enum qemu_plugin_hwaddr_operation_result {
	QEMU_PLUGIN_HWADDR_OPERATION_OK,
	QEMU_PLUGIN_HWADDR_OPERATION_ERROR,
	QEMU_PLUGIN_HWADDR_OPERATION_DEVICE_ERROR,
	QEMU_PLUGIN_HWADDR_OPERATION_ACCESS_DENIED,
	QEMU_PLUGIN_HWADDR_OPERATION_INVALID_ADDRESS,
	QEMU_PLUGIN_HWADDR_OPERATION_INVALID_ADDRESS_SPACE,
};

/* data->len bytes to guest physical address addr. */
enum qemu_plugin_hwaddr_operation_result
qemu_plugin_write_memory_hwaddr(uint64_t addr, GByteArray *data);
/* The same at a guest virtual address; true on success. */
bool qemu_plugin_write_memory_vaddr(uint64_t addr, GByteArray *data);
/* Guest virtual to physical for the current vCPU; false if unmapped. */
bool qemu_plugin_translate_vaddr(uint64_t vaddr, uint64_t *hwaddr);

/* Time control: only one plugin gets a handle (NULL for the rest).
 * update_ns queues work on the calling vCPU, which makes it leave its TB
 * chain at the next TB boundary; the work then moves QEMU's virtual clock
 * forward to new_time (ns), and does nothing for a time already past. */
const void *qemu_plugin_request_time_control(void);
void qemu_plugin_update_ns(const void *handle, int64_t new_time);
/*
 * Held turns (our QEMU patch 0007; weak, so an unpatched QEMU loads the
 * plugin too and the symbol is NULL): before each round-robin turn under
 * -icount QEMU calls held(vcpu_index), and skips the turn when it returns
 * true.  Once every vCPU has been skipped since a turn last ran, the next
 * runs regardless.  Only the holder of the time-control handle may set it.
 */
void qemu_plugin_rr_hold_turns(const void *handle,
                               bool (*held)(unsigned int vcpu_index))
	__attribute__((weak));
/*
 * Reading guest state, for the TLB model's page walks.  These fill a glib
 * GByteArray, growing it with glib's allocator, so the array must be
 * glib's own: busmon makes it with g_byte_array_new(), which, like every
 * glib function, QEMU's executable provides at dlopen (declared here so
 * that no glib headers are needed).  Registers are read only inside a
 * callback registered with QEMU_PLUGIN_CB_R_REGS, or a vCPU init callback.
 */
struct qemu_plugin_register;
typedef struct {
	struct qemu_plugin_register *handle;
	const char *name;
	const char *feature;
} qemu_plugin_reg_descriptor;
typedef struct { char *data; unsigned int len; } GArray;
GByteArray *g_byte_array_new(void);
GByteArray *g_byte_array_set_size(GByteArray *array, unsigned int length);
char *g_array_free(GArray *array, int free_segment);
void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id,
				       qemu_plugin_vcpu_simple_cb_t cb);
GArray *qemu_plugin_get_registers(void);
int qemu_plugin_read_register(struct qemu_plugin_register *handle,
			      GByteArray *buf);
enum qemu_plugin_hwaddr_operation_result
qemu_plugin_read_memory_hwaddr(uint64_t addr, GByteArray *data, size_t len);

/* Miscellaneous. */
int qemu_plugin_num_vcpus(void);
void qemu_plugin_outs(const char *string);

#endif /* QEMU_PLUGIN_API_H */
