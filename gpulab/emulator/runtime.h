// The runtime every emulated kernel is compiled with (gpulab.emulator.cuda): CUDA's built-in
// variables, barriers, warps, atomics and vector types for the host C++ compiler, and the
// memory checks that stand in for compute-sanitizer.
//
// The kernel is compiled with the compiler's ThreadSanitizer instrumentation, which calls a
// function before every load and store (__tsan_read4, __tsan_write8, ...), and with no TSan
// runtime linked: those functions are defined here. Each access is checked against the launch's
// arguments (the allocation each one points into, and the guard zones around it that the
// emulator's allocator keeps free) and against the shared arrays the kernel declared, where every
// byte remembers which thread last wrote and read it since the last __syncthreads(). The first
// out-of-bounds access or shared-memory race stops the launch with one line saying where.
// The runtime's own functions (EMU_RAW) are not instrumented: the scheduler's bookkeeping is no
// kernel's memory, and an atomic is no race.
#include <ucontext.h>
#include <csetjmp>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>
#define DYN_SMEM_BYTES (227 * 1024)  // an H100's most per block: `extern __shared__` arrays
#define EMU_RAW __attribute__((no_sanitize("thread")))
struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int a = 1, unsigned int b = 1, unsigned int c = 1) : x(a), y(b), z(c) {}
};
typedef dim3 uint3;
static dim3 threadIdx, blockIdx, blockDim, gridDim;
namespace emu {
enum { RUN = 0, BAR = 1, WARP = 2, DONE = 3 };
enum { W_SYNC, W_IDX, W_UP, W_DOWN, W_XOR, W_BALLOT, W_ANY, W_ALL, W_ADD, W_UMAX, W_UMIN, W_IMAX, W_IMIN,
    W_MATCH_ANY, W_MATCH_ALL };
static const char* const WNAME[] = {"__syncwarp", "__shfl_sync", "__shfl_up_sync",
    "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync",
    "__reduce_add_sync", "__reduce_max_sync", "__reduce_min_sync", "__reduce_max_sync",
    "__reduce_min_sync", "__match_any_sync", "__match_all_sync"};
// The threads of a block as fibers. Each starts on its own stack from a ucontext (makecontext,
// setcontext); after that every switch is _setjmp/_longjmp, which, unlike swapcontext, costs no
// system call (no signal mask to save): a kernel switches at every barrier and warp operation.
// Plain arrays, as in the memory checks below: a std:: container's methods would be instrumented.
struct Jump { jmp_buf at; };
static const size_t STACK = 64 * 1024;
static Jump scheduler;     // where a thread goes when it waits, returns or is stopped
static Jump* resume;       // where each started thread goes on
static ucontext_t* ctx;    // each thread's start
static char *state, *started, *stacks;
static unsigned* wmask;
static int *wkind, *warg, *wwidth;
static unsigned long long *wval, *wres;
static unsigned capacity;  // threads the arrays hold
static int cur;
static unsigned nthreads;
static char err[600];
static std::function<void()> body;
static bool fibers;       // this launch runs its threads as fibers (it has meeting points)
static jmp_buf direct;    // where a launch without fibers goes when a check stops it
template <class T> EMU_RAW static void regrow(T*& p, size_t n) {
    free(p);
    p = (T*)calloc(n ? n : 1, sizeof(T));
}
EMU_RAW static void reserve(unsigned nt) {
    if (nt <= capacity) return;
    regrow(resume, nt); regrow(ctx, nt); regrow(state, nt); regrow(started, nt);
    regrow(stacks, (size_t)nt * STACK); regrow(wmask, nt); regrow(wkind, nt); regrow(warg, nt);
    regrow(wwidth, nt); regrow(wval, nt); regrow(wres, nt);
    capacity = nt;
}
// The current thread waits: the scheduler runs the others; this returns when it is resumed.
EMU_RAW static void wait_here() {
    if (_setjmp(resume[cur].at) == 0) _longjmp(scheduler.at, 1);
}
EMU_RAW static void entry() {
    body();
    state[cur] = DONE;
    _longjmp(scheduler.at, 1);
}
EMU_RAW static void fail(const char* msg) { if (!err[0]) snprintf(err, sizeof err, "%s", msg); }
// End the launch from inside the current thread: it never runs again.
EMU_RAW static void stop() {
    if (!fibers) longjmp(direct, 1);
    state[cur] = DONE;
    _longjmp(scheduler.at, 1);
}
// ---- memory checks ------------------------------------------------------------------------
// Plain arrays only below: a std:: container's methods are instrumented templates, which would
// call back into the check they serve.
// One kernel argument's memory: the allocation [lo, hi) it points into, the guard zones around
// it [glo, ghi) (free of any other data), the pointer passed, its element size and name.
struct Region {
    uintptr_t lo, hi, glo, ghi, ptr;
    unsigned long long item;
    const char* name;
};
// What one byte of a shared array saw in this block since the last __syncthreads(): its last
// writer and its readers, each with the count of their warp's __syncwarp()s at the time.
enum : unsigned short { NOBODY = 0xffff };
struct Cell {
    unsigned wepoch, repoch, wsync, rsync;
    unsigned short writer, reader, reader2;  // reader2: the last reader other than the first
    unsigned char many, mixed;  // more than one reader; readers from more than one warp
};
struct SharedArray {
    uintptr_t lo, hi;
    const char* name;
    unsigned item, rank, dims[3];
    Cell* cells;
};
alignas(16) static unsigned char dyn_smem[DYN_SMEM_BYTES];
static const Region* regions;
static int nregions;
static SharedArray* shared;  // every shared array registered, of every kernel of the library
static int nshared, shared_cap;
static uintptr_t dyn_lo, dyn_hi, dyn_end;  // dynamic shared memory: given, and all there is
static const char* dyn_name = "dynamic shared memory";
static unsigned dyn_item = 1;
static bool watching;  // inside a launch: the instrumented accesses are the kernel's
// What the launch did, for a check that asks what ran rather than what the source says: its
// accesses to shared memory, and its warp operations that move values between lanes (a
// shuffle or a warp reduce; not a vote, not __syncwarp). A branch no thread takes adds nothing.
static unsigned long long shared_touches, lane_moves;
// Of the shared accesses, those that share: a read of bytes another thread of the block wrote
// last, or an atomic (the location is everyone's). A thread reading back only its own slot
// shares nothing: shared memory then saves no global access.
static unsigned long long shared_shares;
// Atomic adds of floating-point values: they land in the order the blocks run, so a sum built
// from them has the scheduler's last bits (the GPU's rule reads `atom.add.f32` from the PTX;
// without NVRTC, and here, it is counted as it runs).
static unsigned long long float_atomic_adds;
// The most global-memory accesses one thread of one block made: a launch of many threads in
// which one walks the whole array is a loop on one thread, however many were started.
static unsigned long long busiest;
// Bytes the launch stored into global memory, an atomic's included: a map that writes each
// output element once stores its output's size; spare threads that write anyway (an index
// clamped or wrapped instead of a guard) store more.
static unsigned long long global_written;
// Bytes the launch loaded from global memory, an atomic's included: a tiled kernel loads each
// input once a tile, a kernel that reads its operands from global memory once a use.
static unsigned long long global_read;
// The bytes loaded through each argument's allocation (the first 64): which input a kernel
// reads at every use and which it reuses from a tile.
static unsigned long long region_read[64];
// ...and through device memory in no argument's allocation (an address handed as a number)
static unsigned long long stray_read;
// Each thread's first SEQ global accesses in its block (address, store or load), compared lane
// with lane when the block ends, as one instruction of a warp makes them: the k-th access of
// lane i and of lane i - 1 "near" when they lie within 16 bytes (one transaction's run, a
// broadcast included). A transpose's tile makes both its loads and its stores near; the naive
// one scatters its stores a row apart.
enum { SEQ = 32 };
static uintptr_t* gseq;
static unsigned char* gseqw;
static unsigned* gseqn;
static unsigned long long load_pairs, load_near, store_pairs, store_near;
static unsigned long long* tcount;  // this block's accesses by each thread
static unsigned* tblock;            // the block each thread's count is of
static unsigned tcap, block_serial;
static unsigned epoch = 1;  // a new one at each block and each __syncthreads()
// Each warp's __syncwarp() masks since the last barrier (the newest SYNCS of them).
enum { WARPS = 32, SYNCS = 256 };
static unsigned syncmask[WARPS][SYNCS];
static unsigned nsyncs[WARPS];

EMU_RAW static void where(char* out, size_t n, unsigned t) {
    unsigned bx = blockDim.x, by = blockDim.y;
    snprintf(out, n, "block (%u,%u,%u), thread (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z,
             t % bx, t / bx % by, t / (bx * by));
}
EMU_RAW static void thread_name(char* out, size_t n, unsigned t) {
    unsigned bx = blockDim.x, by = blockDim.y;
    snprintf(out, n, "thread (%u,%u,%u)", t % bx, t / bx % by, t / (bx * by));
}
// name[i][j] of byte `b` of a shared array, as the kernel indexes it.
EMU_RAW static void shared_index(char* out, size_t n, const SharedArray& s, uintptr_t b) {
    unsigned long long i = (b - s.lo) / s.item;
    int k = snprintf(out, n, "%s", s.name);
    if (s.rank == 0) return;
    unsigned long long inner = 1;
    for (unsigned d = 1; d < s.rank; ++d) inner *= s.dims[d];
    for (unsigned d = 0; d < s.rank && k < (int)n; ++d) {
        k += snprintf(out + k, n - k, "[%llu]", i / inner);
        i %= inner;
        if (d + 1 < s.rank) inner /= s.dims[d + 1];
    }
}
// Whether lane `a`'s access, made after `stamp` __syncwarp()s of its warp, and lane `b` have
// met at a __syncwarp() since.
EMU_RAW static bool synced(unsigned a, unsigned stamp, unsigned b) {
    if (a / 32 != b / 32 || a / 32 >= WARPS) return false;
    unsigned w = a / 32, n = nsyncs[w];
    unsigned both = (1u << (a % 32)) | (1u << (b % 32));
    unsigned from = n > SYNCS && stamp < n - SYNCS ? n - SYNCS : stamp;
    for (unsigned k = from; k < n; ++k) if ((syncmask[w][k % SYNCS] & both) == both) return true;
    return false;
}
EMU_RAW static void race(const SharedArray& s, uintptr_t b, unsigned other, bool write) {
    char here[96], me[48], them[48], slot[96], msg[600];
    where(here, sizeof here, cur);
    thread_name(me, sizeof me, cur);
    thread_name(them, sizeof them, other);
    shared_index(slot, sizeof slot, s, b);
    bool warp = other / 32 == (unsigned)cur / 32;
    snprintf(msg, sizeof msg,
             "%s: shared-memory race on %s: %s reads it and %s writes it with no "
             "__syncthreads() between (compute-sanitizer racecheck: a %s hazard)%s", here, slot,
             write ? them : me, write ? me : them,
             write ? "write-after-read" : "read-after-write",
             warp ? "; they are lanes of one warp, which need not move in lockstep: a "
                    "__syncwarp() at least must order them"
                  : "");
    fail(msg);
    stop();
}
static bool shared_from_other;  // set by shared_access: this read saw another thread's bytes
EMU_RAW static void shared_access(SharedArray& s, uintptr_t a, unsigned n, bool write) {
    unsigned t = (unsigned)cur;
    unsigned stamp = t / 32 < WARPS ? nsyncs[t / 32] : 0;
    uintptr_t b0 = a < s.lo ? s.lo : a, b1 = a + n > s.hi ? s.hi : a + n;
    for (uintptr_t b = b0; b < b1; ++b) {
        Cell& c = s.cells[b - s.lo];
        if (write) {
            if (c.repoch == epoch && (c.reader != t || c.many)) {
                unsigned other = c.reader != t ? c.reader : c.reader2;
                if (c.mixed || !synced(other, c.rsync, t)) race(s, b, other, true);
            }
            c.writer = (unsigned short)t; c.wepoch = epoch; c.wsync = stamp;
        } else {
            if (c.wepoch == epoch && c.writer != t && !synced(c.writer, c.wsync, t))
                race(s, b, c.writer, false);
            if (c.wepoch != 0 && c.writer != t) shared_from_other = true;
            if (c.repoch != epoch) {
                c.repoch = epoch; c.reader = (unsigned short)t; c.rsync = stamp;
                c.many = c.mixed = 0;
            } else if (c.reader != t) {
                c.many = 1;
                c.reader2 = (unsigned short)t;
                c.mixed |= c.reader / 32 != t / 32;
                if (stamp > c.rsync) c.rsync = stamp;
            }
        }
    }
}
EMU_RAW static void out_of_bounds(const Region& r, uintptr_t a, unsigned n, bool write) {
    char here[96], msg[600];
    where(here, sizeof here, cur);
    long long item = (long long)(r.item ? r.item : 1);
    long long off = (long long)a - (long long)r.ptr;
    long long index = off >= 0 ? off / item : -((-off + item - 1) / item);
    const char* how = write ? "write" : "read";
    const char* did = write ? "wrote" : "read";
    bool before = a < r.lo;
    long long edge = before ? ((long long)r.lo - (long long)r.ptr) / item
                            : ((long long)r.hi - (long long)r.ptr) / item - 1;
    long long away = before ? ((long long)r.lo - (long long)a + item - 1) / item
                            : ((long long)(a + n) - (long long)r.hi + item - 1) / item;
    snprintf(msg, sizeof msg,
             "%s: out-of-bounds %s: %s %s of %s's allocation, at %s[%lld], %lld element%s %s "
             "its %s element %s[%lld] (compute-sanitizer: Invalid __global__ %s of size %u)",
             here, how, did, before ? "before the start" : "past the end", r.name, r.name, index,
             away, away == 1 ? "" : "s", before ? "before" : "after", before ? "first" : "last",
             r.name, edge, how, n);
    fail(msg);
    stop();
}
EMU_RAW static void dyn_out_of_bounds(uintptr_t a, unsigned n, bool write) {
    char here[96], msg[600];
    where(here, sizeof here, cur);
    const char* how = write ? "write" : "read";
    snprintf(msg, sizeof msg,
             "%s: out-of-bounds %s of %s[%llu], past the %llu bytes of dynamic shared memory "
             "the launch gave (its shared_mem) (compute-sanitizer: Invalid __shared__ %s of size "
             "%u)", here, how, dyn_name, (unsigned long long)((a - dyn_lo) / dyn_item),
             (unsigned long long)(dyn_hi - dyn_lo), how, n);
    fail(msg);
    stop();
}
// Every device allocation the emulator's memory holds (sorted [lo, hi) pairs, set before each
// launch): what a pointer the kernel did not get as an argument may still point into (an array
// of pointers). Anything else is no device memory: a host buffer's address handed over as a
// number, or a stray pointer. A GPU stops such an access; here the kernel would read and write
// the host's memory (and the runtime's own bookkeeping) without a copy the trace records.
static const uintptr_t* device;
static int ndevice;
static uintptr_t stack_lo, stack_hi;  // a launch without fibers: the host thread's stack below it
EMU_RAW static bool in_device(uintptr_t a, unsigned n) {
    int lo = 0, hi = ndevice;
    while (lo < hi) {  // the last allocation starting at or before a
        int mid = (lo + hi) / 2;
        if (device[2 * mid] <= a) lo = mid + 1; else hi = mid;
    }
    return lo > 0 && a + n <= device[2 * (lo - 1) + 1];
}
// The thread's own locals (its fiber's stack), the launch's host stack (where a launch without
// fibers runs its threads, and the scheduler, whose dim3 temporaries are instrumented code), and
// CUDA's built-in variables.
EMU_RAW static bool own_memory(uintptr_t a, unsigned n) {
    if (a >= stack_lo && a + n <= stack_hi) return true;
    uintptr_t lo = fibers ? (uintptr_t)&stacks[(size_t)cur * STACK] : 0;
    if (fibers && a >= lo && a + n <= lo + STACK) return true;
    const dim3* builtins[] = {&threadIdx, &blockIdx, &blockDim, &gridDim};
    for (int i = 0; i < 4; ++i)
        if (a >= (uintptr_t)builtins[i] && a + n <= (uintptr_t)(builtins[i] + 1)) return true;
    // std::function's own code is instrumented: its reads of the kernel's body, the launch's
    return a >= (uintptr_t)&body && a + n <= (uintptr_t)(&body + 1);
}
EMU_RAW static void outside_device(uintptr_t a, unsigned n, bool write) {
    char here[96], msg[600];
    where(here, sizeof here, cur);
    snprintf(msg, sizeof msg,
             "%s: %s memory outside the device at 0x%llx, in no device allocation (host "
             "memory, or a stray pointer): the data must stay in device memory, where your "
             "kernels do the work (compute-sanitizer: Invalid __global__ %s of size %u)",
             here, write ? "wrote" : "read", (unsigned long long)a, write ? "write" : "read", n);
    fail(msg);
    stop();
}
// Every instrumented load and store of the kernel comes here before it happens; `weight`: how
// many accesses it stands for (a memcpy's bytes, a word each).
EMU_RAW static void access(uintptr_t a, unsigned n, bool write, bool atomic = false,
                           unsigned long long weight = 1) {
    if (!watching) return;
    if (a + n > dyn_hi && a < dyn_end && a + n > dyn_lo) dyn_out_of_bounds(a, n, write);
    for (int i = 0; i < nshared; ++i) {
        SharedArray& s = shared[i];
        if (a + n > s.lo && a < s.hi) {
            shared_touches += weight;
            shared_from_other = atomic;
            if (!atomic) shared_access(s, a, n, write);
            if (shared_from_other) shared_shares += weight;
            return;
        }
    }
    bool global = false;
    int which = -1;
    for (int i = 0; i < nregions && !global; ++i)
        if ((global = a >= regions[i].lo && a + n <= regions[i].hi)) which = i;
    // an atomic loads what it updates: a read and a write (a value fetched with atomicOr(p, 0)
    // is a load like any other)
    if ((!write || atomic) && which >= 0 && which < 64) region_read[which] += n;
    if (!global) {
        for (int i = 0; i < nregions; ++i)
            if (a + n > regions[i].glo && a < regions[i].ghi)
                out_of_bounds(regions[i], a, n, write);
        if (own_memory(a, n)) return;
        if (!in_device(a, n)) outside_device(a, n, write);
        if (!write || atomic) stray_read += n;
    }
    if (atomic) {
        global_read += n;
        global_written += n;
    } else {
        (write ? global_written : global_read) += n;
        unsigned k = gseqn[cur];
        if (k < SEQ) {
            gseq[(size_t)cur * SEQ + k] = a;
            gseqw[(size_t)cur * SEQ + k] = write;
            gseqn[cur] = k + 1;
        }
    }
    if (tblock[cur] != block_serial) { tblock[cur] = block_serial; tcount[cur] = 0; }
    tcount[cur] += weight;
    if (tcount[cur] > busiest) busiest = tcount[cur];
}
// memcpy, memmove and memset in a kernel: each byte range checked as one access of the thread
// (bounds, races, host memory) and counted a word at a time, as the loads it replaces would be.
EMU_RAW static void span(const void* p, size_t n, bool write) {
    if (n) access((uintptr_t)p, (unsigned)n, write, false, (n + 3) / 4);
}
EMU_RAW static void add_shared(uintptr_t lo, size_t bytes, const char* name, unsigned item,
                               unsigned rank, unsigned d0, unsigned d1, unsigned d2) {
    SharedArray* s = nullptr;
    for (int i = 0; i < nshared && !s; ++i) if (shared[i].lo == lo) s = &shared[i];
    if (s && s->hi == lo + bytes && s->name == name) return;
    if (!s) {
        if (nshared == shared_cap) {
            shared_cap = shared_cap ? 2 * shared_cap : 64;
            shared = (SharedArray*)realloc(shared, shared_cap * sizeof(SharedArray));
        }
        s = &shared[nshared++];
        s->cells = nullptr;
    }
    free(s->cells);  // a dynamic array resized, or a new one
    *s = SharedArray{lo, lo + bytes, name, item ? item : 1, rank, {d0, d1, d2}, nullptr};
    s->cells = (Cell*)calloc(bytes ? bytes : 1, sizeof(Cell));
}
// `__shared__ T name[...]` registers itself here each time a thread passes it.
template <class A> EMU_RAW static inline void name_shared(A& a, const char* name) {
    typedef typename std::remove_all_extents<A>::type E;
    add_shared((uintptr_t)&a, sizeof(A), name, sizeof(E), std::rank<A>::value,
               std::extent<A, 0>::value, std::extent<A, 1>::value, std::extent<A, 2>::value);
}
EMU_RAW static void register_dynamic() {
    size_t bytes = dyn_hi - dyn_lo;
    if (bytes) add_shared(dyn_lo, bytes, dyn_name, dyn_item, 1, (unsigned)(bytes / dyn_item), 0, 0);
}
// `extern __shared__ T name[];`: a pointer to the one dynamic buffer, named for the messages.
template <class T> EMU_RAW static inline T* dynamic_shared(const char* name) {
    dyn_name = name;
    dyn_item = sizeof(T);
    if (watching) register_dynamic();
    return reinterpret_cast<T*>(dyn_smem);
}
// A new barrier interval: what any thread did in shared memory before is ordered before it.
EMU_RAW static void new_epoch() {
    ++epoch;
    memset(nsyncs, 0, sizeof nsyncs);
}
// A __syncwarp() of warp `w` with `mask` released its lanes.
EMU_RAW static void syncwarp_done(unsigned w, unsigned mask) {
    if (w < WARPS) syncmask[w][nsyncs[w]++ % SYNCS] = mask;
}
}
// The instrumentation's entry points (no TSan runtime is linked: these are all there is).
#define EMU_ACCESS(n)                                                                             \
    extern "C" EMU_RAW void __tsan_read##n(void* a) { emu::access((uintptr_t)a, n, false); }      \
    extern "C" EMU_RAW void __tsan_write##n(void* a) { emu::access((uintptr_t)a, n, true); }      \
    extern "C" EMU_RAW void __tsan_unaligned_read##n(void* a) { emu::access((uintptr_t)a, n, false); } \
    extern "C" EMU_RAW void __tsan_unaligned_write##n(void* a) { emu::access((uintptr_t)a, n, true); }
EMU_ACCESS(1)
EMU_ACCESS(2)
EMU_ACCESS(4)
EMU_ACCESS(8)
EMU_ACCESS(16)
// a range (a struct or an array copied whole) counts a word at a time, as span() does: counted
// as one access, a thread copying a row in 1 KiB chunks passed the one-thread rules
extern "C" EMU_RAW void __tsan_read_range(void* a, size_t n) { emu::access((uintptr_t)a, (unsigned)n, false, false, (n + 3) / 4); }
extern "C" EMU_RAW void __tsan_write_range(void* a, size_t n) { emu::access((uintptr_t)a, (unsigned)n, true, false, (n + 3) / 4); }
extern "C" EMU_RAW void __tsan_init() {}
extern "C" EMU_RAW void __tsan_func_entry(void*) {}
extern "C" EMU_RAW void __tsan_func_exit() {}
extern "C" EMU_RAW void __tsan_vptr_update(void**, void*) {}
extern "C" EMU_RAW void __tsan_vptr_read(void**) {}
namespace emu {
EMU_RAW static int source_lane(int kind, int i, int arg, int w);
EMU_RAW static unsigned long long warp_op(int kind, unsigned mask, unsigned long long v, int arg, int w) {
    int t = cur;
    // A lane that reads its own value (a butterfly by 0, an index naming itself) moves nothing
    bool shuffle = kind == W_IDX || kind == W_UP || kind == W_DOWN || kind == W_XOR;
    int from = shuffle ? source_lane(kind, t % 32, arg, w) : -1;
    if (shuffle ? from >= 0 && from != t % 32
                : kind != W_SYNC && kind != W_BALLOT && kind != W_ANY && kind != W_ALL)
        ++lane_moves;
    state[t] = WARP; wkind[t] = kind; wmask[t] = mask; wval[t] = v; warg[t] = arg; wwidth[t] = w;
    wait_here();
    return wres[t];
}
// Lane `i`'s source lane for a shuffle of `kind` (-1: its own value, as CUDA gives past a segment).
EMU_RAW static int source_lane(int kind, int i, int arg, int w) {
    if (w < 1 || w > 32 || (w & (w - 1))) w = 32;
    int seg = i / w * w, j = i % w;
    if (kind == W_IDX) return seg + ((arg % w) + w) % w;
    if (kind == W_UP) return j - arg < 0 ? -1 : i - arg;
    if (kind == W_DOWN) return j + arg >= w ? -1 : i + arg;
    int s = i ^ arg;
    return (s < 0 || s / w != i / w) ? -1 : s;
}
// Release warp `base`'s waiting lanes if every lane their mask names has arrived; false if not.
EMU_RAW static bool release(unsigned base) {
    unsigned end = base + 32 < nthreads ? base + 32 : nthreads;
    int first = -1;
    char msg[400];
    for (unsigned t = base; t < end; ++t) {
        if (state[t] != WARP) continue;
        unsigned lane = t - base;
        if (!((wmask[t] >> lane) & 1u)) {
            snprintf(msg, sizeof msg, "thread %u (lane %u of warp %u) called %s with mask 0x%08x, "
                "which leaves that lane out: undefined on a GPU", t, lane, base / 32,
                WNAME[wkind[t]], wmask[t]);
            fail(msg);
            return false;
        }
        if (first < 0) first = (int)t;
    }
    if (first < 0) return false;
    unsigned m = wmask[first];
    int kind = wkind[first];
    for (unsigned lane = 0; lane < 32; ++lane) {
        if (!((m >> lane) & 1u) || base + lane >= end) continue;
        unsigned t = base + lane;
        if (state[t] == DONE) {
            snprintf(msg, sizeof msg, "lane %u of warp %u called %s with mask 0x%08x, but lane "
                "%u, named in the mask, had already returned: undefined on a GPU",
                (unsigned)first - base, base / 32, WNAME[kind], m, lane);
            fail(msg);
            return false;
        }
        if (state[t] != WARP) return false;  // not here yet
        if (wmask[t] != m || wkind[t] != kind) {
            snprintf(msg, sizeof msg, "lanes %u and %u of warp %u meet at different warp "
                "operations (%s mask 0x%08x, %s mask 0x%08x): undefined on a GPU",
                (unsigned)first - base, lane, base / 32, WNAME[kind], m, WNAME[wkind[t]],
                wmask[t]);
            fail(msg);
            return false;
        }
    }
    if (kind == W_SYNC) syncwarp_done(base / 32, m);  // memory ordered among its lanes
    unsigned long long vote = 0, all = 1, sum = 0;
    unsigned umax = 0, umin = 0xffffffffu;
    int imax = INT_MIN, imin = INT_MAX;
    for (unsigned lane = 0; lane < 32; ++lane) {
        if (!((m >> lane) & 1u) || base + lane >= end) continue;
        unsigned long long v = wval[base + lane];
        vote |= (v != 0ull) << lane;
        all &= v != 0ull;
        sum += v;
        unsigned u = (unsigned)v;
        int i = (int)u;
        if (u > umax) umax = u;
        if (u < umin) umin = u;
        if (i > imax) imax = i;
        if (i < imin) imin = i;
    }
    for (unsigned lane = 0; lane < 32; ++lane) {
        if (!((m >> lane) & 1u) || base + lane >= end) continue;
        unsigned t = base + lane;
        switch (kind) {
            case W_SYNC: break;
            case W_BALLOT: wres[t] = vote; break;
            case W_ANY: wres[t] = vote != 0; break;
            case W_ALL: wres[t] = all; break;
            case W_ADD: wres[t] = sum & 0xffffffffull; break;
            case W_UMAX: wres[t] = umax; break;
            case W_UMIN: wres[t] = umin; break;
            case W_IMAX: wres[t] = (unsigned)imax; break;
            case W_IMIN: wres[t] = (unsigned)imin; break;
            case W_MATCH_ANY:
            case W_MATCH_ALL: {
                // the lanes of the mask whose value has these bits (all of them, or none: all)
                unsigned same = 0;
                for (unsigned o = 0; o < 32; ++o)
                    if (((m >> o) & 1u) && base + o < end && wval[base + o] == wval[t]) same |= 1u << o;
                unsigned named = end - base >= 32 ? m : m & ((1u << (end - base)) - 1u);
                wres[t] = kind == W_MATCH_ANY ? same : (same == named ? named : 0u);
                break;
            }
            default: {
                int s = source_lane(kind, (int)lane, warg[t], wwidth[t]);
                if (s < 0) { wres[t] = wval[t]; break; }
                if (!((m >> s) & 1u) || base + s >= end) {
                    snprintf(msg, sizeof msg, "lane %u of warp %u reads lane %d through %s, but "
                        "the mask 0x%08x leaves lane %d out: its value is undefined on a GPU",
                        lane, base / 32, s, WNAME[kind], m, s);
                    fail(msg);
                    return false;
                }
                wres[t] = wval[base + s];
            }
        }
        state[t] = RUN;
    }
    return true;
}
// A block's threads are done: their access sequences compared lane with lane, then cleared.
EMU_RAW static void block_done(unsigned nt) {
    for (unsigned t = 1; t < nt; ++t) {
        if (t % 32 == 0) continue;
        unsigned m = gseqn[t] < gseqn[t - 1] ? gseqn[t] : gseqn[t - 1];
        for (unsigned k = 0; k < m; ++k) {
            size_t i = (size_t)t * SEQ + k, j = (size_t)(t - 1) * SEQ + k;
            if (gseqw[i] != gseqw[j]) continue;
            uintptr_t d = gseq[i] > gseq[j] ? gseq[i] - gseq[j] : gseq[j] - gseq[i];
            if (gseqw[i]) { ++store_pairs; store_near += d <= 16; }
            else { ++load_pairs; load_near += d <= 16; }
        }
    }
    memset(gseqn, 0, nt * sizeof *gseqn);
}
// Run a grid, blocks in `order` (or in turn); `rs` are the arguments' regions, `dyn` the bytes
// of dynamic shared memory the launch gave.
EMU_RAW static void launch(dim3 g, dim3 b, bool barriers, const unsigned* order, const Region* rs,
                           int nrs, unsigned long long dyn, std::function<void()> f) {
    gridDim = g; blockDim = b; body = f;
    unsigned nt = b.x * b.y * b.z;
    unsigned nb = g.x * g.y * g.z;
    nthreads = nt;
    err[0] = 0;
    shared_touches = lane_moves = shared_shares = float_atomic_adds = busiest = global_written = global_read = 0;
    memset(region_read, 0, sizeof region_read);
    stray_read = 0;
    load_pairs = load_near = store_pairs = store_near = 0;
    if (nt > tcap) {
        regrow(tcount, nt); regrow(tblock, nt); regrow(gseqn, nt);
        regrow(gseq, (size_t)nt * SEQ); regrow(gseqw, (size_t)nt * SEQ);
        tcap = nt;
    }
    memset(gseqn, 0, nt * sizeof *gseqn);
    regions = rs; nregions = nrs;
    dyn_lo = (uintptr_t)emu::dyn_smem; dyn_hi = dyn_lo + dyn; dyn_end = dyn_lo + DYN_SMEM_BYTES;
    register_dynamic();
    fibers = barriers;
    // The kernel's frames lie below this one when it runs on this thread's stack; the launcher's
    // just above hold the std::function `f`, whose instrumented code reads it
    char frame;
    stack_hi = (uintptr_t)&frame + ((uintptr_t)64 << 10);
    stack_lo = (uintptr_t)&frame - ((uintptr_t)64 << 20);
    if (!barriers) {  // no meeting points: each thread runs to its end, no fibers needed
        watching = true;
        if (setjmp(direct) == 0) {
            for (unsigned k = 0; k < nb; ++k) {
                unsigned id = order ? order[k] : k;
                blockIdx = dim3(id % g.x, (id / g.x) % g.y, id / (g.x * g.y));
                ++block_serial;
                new_epoch();
                for (unsigned t = 0; t < nt; ++t) {
                    cur = (int)t;
                    threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                    f();
                }
                block_done(nt);
            }
        }
        watching = false;
        return;
    }
    reserve(nt);
    for (unsigned t = 0; t < nt; ++t) {
        wmask[t] = 0; wkind[t] = 0; warg[t] = 0; wwidth[t] = 32; wval[t] = 0; wres[t] = 0;
    }
    ucontext_t start;
    getcontext(&start);
    watching = true;
    for (unsigned k = 0; k < nb && !err[0]; ++k) {
        unsigned id = order ? order[k] : k;
        blockIdx = dim3(id % g.x, (id / g.x) % g.y, id / (g.x * g.y));
        ++block_serial;
        new_epoch();
        for (unsigned t = 0; t < nt; ++t) {
            ctx[t] = start;
            ctx[t].uc_stack.ss_sp = &stacks[t * STACK];
            ctx[t].uc_stack.ss_size = STACK;
            ctx[t].uc_link = nullptr;  // entry() never returns: it jumps to the scheduler
            makecontext(&ctx[t], entry, 0);
            state[t] = RUN;
            started[t] = 0;
        }
        for (;;) {
            for (unsigned t = 0; t < nt && !err[0]; ++t) {
                if (state[t] != RUN) continue;
                cur = (int)t;
                threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                if (_setjmp(scheduler.at) == 0) {
                    if (!started[t]) {
                        started[t] = 1;
                        setcontext(&ctx[t]);
                    }
                    _longjmp(resume[t].at, 1);
                }
            }
            if (err[0]) break;
            bool moved = false;
            for (unsigned w = 0; w < nt; w += 32) moved = release(w) || moved;
            if (err[0]) break;
            if (moved) continue;
            bool bar = false, warp = false;
            for (unsigned t = 0; t < nt; ++t) {
                bar = bar || state[t] == BAR;
                warp = warp || state[t] == WARP;
            }
            if (warp) {
                fail("a warp operation waits for lanes that wait at __syncthreads() or never "
                     "come: a deadlock on a GPU");
                break;
            }
            if (!bar) break;
            new_epoch();
            for (unsigned t = 0; t < nt; ++t) if (state[t] == BAR) state[t] = RUN;
        }
        if (!err[0]) block_done(nt);
    }
    watching = false;
}
}
extern "C" const char* emu_last_error() { return emu::err; }
extern "C" EMU_RAW void emu_set_device(const uintptr_t* spans, int n) {
    emu::device = spans;
    emu::ndevice = n;
}
extern "C" unsigned long long emu_shared_touches() { return emu::shared_touches; }
extern "C" unsigned long long emu_lane_moves() { return emu::lane_moves; }
extern "C" unsigned long long emu_shared_shares() { return emu::shared_shares; }
extern "C" unsigned long long emu_float_atomic_adds() { return emu::float_atomic_adds; }
extern "C" unsigned long long emu_busiest_thread() { return emu::busiest; }
extern "C" unsigned long long emu_global_written() { return emu::global_written; }
extern "C" unsigned long long emu_global_read() { return emu::global_read; }
extern "C" unsigned long long emu_stray_read() { return emu::stray_read; }
extern "C" unsigned long long emu_load_pairs() { return emu::load_pairs; }
extern "C" unsigned long long emu_load_near() { return emu::load_near; }
extern "C" unsigned long long emu_store_pairs() { return emu::store_pairs; }
extern "C" unsigned long long emu_store_near() { return emu::store_near; }
extern "C" unsigned long long emu_region_read(int i) { return i >= 0 && i < 64 ? emu::region_read[i] : 0; }
EMU_RAW static void __syncthreads() { emu::state[emu::cur] = emu::BAR; emu::wait_here(); }
template <class T> static inline unsigned long long emu_bits(T v) {
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    unsigned long long b = 0; std::memcpy(&b, &v, sizeof(T)); return b;
}
template <class T> static inline T emu_from(unsigned long long b) { T v; std::memcpy(&v, &b, sizeof(T)); return v; }
static inline void __syncwarp(unsigned m = 0xffffffffu) { emu::warp_op(emu::W_SYNC, m, 0, 0, 32); }
template <class T> static inline T __shfl_sync(unsigned m, T v, int src, int w = 32) {
    return emu_from<T>(emu::warp_op(emu::W_IDX, m, emu_bits(v), src, w));
}
template <class T> static inline T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) {
    return emu_from<T>(emu::warp_op(emu::W_UP, m, emu_bits(v), (int)d, w));
}
template <class T> static inline T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) {
    return emu_from<T>(emu::warp_op(emu::W_DOWN, m, emu_bits(v), (int)d, w));
}
template <class T> static inline T __shfl_xor_sync(unsigned m, T v, int d, int w = 32) {
    return emu_from<T>(emu::warp_op(emu::W_XOR, m, emu_bits(v), d, w));
}
static inline unsigned __ballot_sync(unsigned m, int p) { return (unsigned)emu::warp_op(emu::W_BALLOT, m, p != 0, 0, 32); }
static inline int __any_sync(unsigned m, int p) { return (int)emu::warp_op(emu::W_ANY, m, p != 0, 0, 32); }
static inline int __all_sync(unsigned m, int p) { return (int)emu::warp_op(emu::W_ALL, m, p != 0, 0, 32); }
// Warp-aggregated atomics group lanes by value: a 4- or 8-byte value, compared by its bits
template <class T> static inline unsigned __match_any_sync(unsigned m, T v) {
    return (unsigned)emu::warp_op(emu::W_MATCH_ANY, m, emu_bits(v), 0, 32);
}
template <class T> static inline unsigned __match_all_sync(unsigned m, T v, int* pred) {
    unsigned r = (unsigned)emu::warp_op(emu::W_MATCH_ALL, m, emu_bits(v), 0, 32);
    *pred = r != 0;
    return r;
}
static inline unsigned __reduce_add_sync(unsigned m, unsigned v) { return (unsigned)emu::warp_op(emu::W_ADD, m, v, 0, 32); }
static inline int __reduce_add_sync(unsigned m, int v) { return (int)(unsigned)emu::warp_op(emu::W_ADD, m, (unsigned)v, 0, 32); }
static inline unsigned __reduce_max_sync(unsigned m, unsigned v) { return (unsigned)emu::warp_op(emu::W_UMAX, m, v, 0, 32); }
static inline int __reduce_max_sync(unsigned m, int v) { return (int)(unsigned)emu::warp_op(emu::W_IMAX, m, (unsigned)v, 0, 32); }
static inline unsigned __reduce_min_sync(unsigned m, unsigned v) { return (unsigned)emu::warp_op(emu::W_UMIN, m, v, 0, 32); }
static inline int __reduce_min_sync(unsigned m, int v) { return (int)(unsigned)emu::warp_op(emu::W_IMIN, m, (unsigned)v, 0, 32); }
static const int warpSize = 32;  // CUDA's built-in variable: a warp's lanes
static inline void __nanosleep(unsigned) {}  // a hint to the scheduler: nothing to wait for here
EMU_RAW static inline unsigned __activemask() {  // the lanes of this warp that have not returned
    unsigned base = emu::cur / 32 * 32, m = 0;
    for (unsigned l = 0; l < 32 && base + l < emu::nthreads; ++l) if (emu::state[base + l] != emu::DONE) m |= 1u << l;
    return m;
}
static inline void __threadfence() {}
static inline void __threadfence_block() {}
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__  // empty: a header's __attribute__((__noinline__)) stays valid
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))  // anywhere in a declaration, as nvcc allows
struct float2 { float x, y; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
struct __attribute__((aligned(8))) int2 { int x, y; };
struct __attribute__((aligned(8))) uint2 { unsigned int x, y; };
struct __attribute__((aligned(16))) uint4 { unsigned int x, y, z, w; };
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline uint2 make_uint2(unsigned int x, unsigned int y) { return {x, y}; }
static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return {x, y, z, w}; }
namespace cooperative_groups {
struct thread_block {
    unsigned thread_rank() const { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
    unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
    unsigned num_threads() const { return size(); }
    dim3 group_index() const { return blockIdx; }
    dim3 thread_index() const { return threadIdx; }
    dim3 group_dim() const { return blockDim; }
    void sync() const { __syncthreads(); }
};
static inline thread_block this_thread_block() { return thread_block(); }
static inline void sync(const thread_block& b) { b.sync(); }
template <unsigned N, class P = void> struct thread_block_tile {
    thread_block_tile() = default;
    template <class Q> thread_block_tile(const thread_block_tile<N, Q>&) {}
    static unsigned rank() { return thread_block().thread_rank(); }
    unsigned thread_rank() const { return rank() % N; }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return rank() / N; }
    unsigned meta_group_size() const { return (thread_block().size() + N - 1) / N; }
    unsigned mask() const {
        return N == 32 ? 0xffffffffu : ((1u << N) - 1u) << (rank() % 32 / N * N);
    }
    void sync() const { __syncwarp(mask()); }
    template <class T> T shfl(T v, int src) const { return __shfl_sync(mask(), v, src, N); }
    template <class T> T shfl_up(T v, unsigned d) const { return __shfl_up_sync(mask(), v, d, N); }
    template <class T> T shfl_down(T v, unsigned d) const { return __shfl_down_sync(mask(), v, d, N); }
    template <class T> T shfl_xor(T v, int d) const { return __shfl_xor_sync(mask(), v, d, N); }
    unsigned ballot(int p) const { return __ballot_sync(mask(), p) >> (rank() % 32 / N * N); }
    int any(int p) const { return __any_sync(mask(), p); }
    int all(int p) const { return __all_sync(mask(), p); }
};
template <unsigned N, class P> static inline thread_block_tile<N, P> tiled_partition(const P&) { return {}; }
template <unsigned N, class P> static inline void sync(const thread_block_tile<N, P>& g) { g.sync(); }
// The lanes of a warp active where it was made (coalesced_threads()): its ranks count those
// lanes in order, whatever their positions (a red team's correct dot-reduction used it and
// the emulator refused to compile it)
struct coalesced_group {
    unsigned m;
    explicit coalesced_group(unsigned mask) : m(mask) {}
    EMU_RAW static unsigned lane() { return (unsigned)emu::cur % 32u; }
    unsigned thread_rank() const { return (unsigned)__builtin_popcount(m & ((1u << lane()) - 1u)); }
    unsigned size() const { return (unsigned)__builtin_popcount(m); }
    unsigned num_threads() const { return size(); }
    unsigned lane_of(unsigned r) const {
        unsigned x = m;
        for (unsigned i = 0; i < r && x; ++i) x &= x - 1u;
        return x ? (unsigned)__builtin_ctz(x) : 0u;
    }
    void sync() const { __syncwarp(m); }
    template <class T> T shfl(T v, int src) const { return __shfl_sync(m, v, (int)lane_of((unsigned)src)); }
    int any(int p) const { return __any_sync(m, p); }
    int all(int p) const { return __all_sync(m, p); }
};
static inline coalesced_group coalesced_threads() { return coalesced_group(__activemask()); }
static inline void sync(const coalesced_group& g) { g.sync(); }
template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return a < b ? a : b; } };
template <class T> struct greater { T operator()(T a, T b) const { return a > b ? a : b; } };
template <unsigned N, class P, class T, class Op>
static inline T reduce(const thread_block_tile<N, P>& g, T v, Op op) {
    for (unsigned o = N / 2; o > 0; o >>= 1) v = op(v, g.shfl_xor(v, (int)o));
    return v;
}
template <class T, class Op> static inline T reduce(const coalesced_group& g, T v, Op op) {
    T acc = g.shfl(v, 0);  // every lane folds the same values in rank order: one answer for all
    for (unsigned r = 1; r < g.size(); ++r) acc = op(acc, g.shfl(v, (int)r));
    return acc;
}
}
struct __half {
    _Float16 v;
    __half() = default;
    __half(float f) : v((_Float16)f) {}
    operator float() const { return (float)v; }
};
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline float __half2float(__half h) { return (float)h.v; }
static inline __half __hadd(__half a, __half b) { return __half((float)a.v + (float)b.v); }
static inline __half __hmul(__half a, __half b) { return __half((float)a.v * (float)b.v); }
static inline __half __hfma(__half a, __half b, __half c) { return __half((float)a.v * (float)b.v + (float)c.v); }
// Atomics: checked for bounds, never counted as a race; blocks never run at once here.
#define EMU_ATOMIC(T, NAME, UPDATE)                                         \
    EMU_RAW static inline T NAME(T* p, T v) {                               \
        emu::access((uintptr_t)p, sizeof(T), true, true);                   \
        T old = *p;                                                         \
        UPDATE;                                                             \
        return old;                                                         \
    }
EMU_ATOMIC(float, atomicAdd, *p = old + v; ++emu::float_atomic_adds)
EMU_ATOMIC(double, atomicAdd, *p = old + v; ++emu::float_atomic_adds)
EMU_ATOMIC(int, atomicAdd, *p = old + v)
EMU_ATOMIC(unsigned int, atomicAdd, *p = old + v)
EMU_ATOMIC(unsigned long long, atomicAdd, *p = old + v)
EMU_ATOMIC(int, atomicSub, *p = old - v)
EMU_ATOMIC(unsigned int, atomicSub, *p = old - v)
EMU_ATOMIC(float, atomicMax, if (v > old) *p = v)
EMU_ATOMIC(int, atomicMax, if (v > old) *p = v)
EMU_ATOMIC(unsigned int, atomicMax, if (v > old) *p = v)
EMU_ATOMIC(unsigned long long, atomicMax, if (v > old) *p = v)
EMU_ATOMIC(int, atomicMin, if (v < old) *p = v)
EMU_ATOMIC(unsigned int, atomicMin, if (v < old) *p = v)
EMU_ATOMIC(int, atomicExch, *p = v)
EMU_ATOMIC(unsigned int, atomicExch, *p = v)
EMU_ATOMIC(float, atomicExch, *p = v)
EMU_ATOMIC(int, atomicOr, *p = old | v)
EMU_ATOMIC(unsigned int, atomicOr, *p = old | v)
EMU_ATOMIC(int, atomicAnd, *p = old & v)
EMU_ATOMIC(unsigned int, atomicAnd, *p = old & v)
#define EMU_CAS(T)                                                          \
    EMU_RAW static inline T atomicCAS(T* p, T cmp, T v) {                   \
        emu::access((uintptr_t)p, sizeof(T), true, true);                   \
        T old = *p;                                                         \
        if (old == cmp) *p = v;                                             \
        return old;                                                         \
    }
// atomicInc/atomicDec: CUDA's wrapping counters (unsigned only, as in CUDA)
EMU_ATOMIC(unsigned int, atomicInc, *p = old >= v ? 0u : old + 1u)
EMU_ATOMIC(unsigned int, atomicDec, *p = (old == 0u || old > v) ? v : old - 1u)
EMU_CAS(int)
EMU_CAS(unsigned int)
EMU_CAS(unsigned long long)
template <class T> static inline T __ldg(const T* p) { return *p; }
#define __launch_bounds__(...)
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline float min(float a, float b) { return a < b ? a : b; }
static inline float max(float a, float b) { return a > b ? a : b; }
static inline double min(double a, double b) { return a < b ? a : b; }
static inline double max(double a, double b) { return a > b ? a : b; }
static inline float __fdividef(float a, float b) { return a / b; }
// Rounded arithmetic and bit intrinsics: the host's (round-to-nearest is the host's default)
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return std::sqrt(a); }
static inline float rsqrtf(float a) { return 1.0f / std::sqrt(a); }
static inline float __saturatef(float a) { return a < 0.0f ? 0.0f : (a > 1.0f ? 1.0f : a); }
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
static inline int __clz(int v) { return v ? __builtin_clz((unsigned)v) : 32; }
static inline int __clzll(long long v) { return v ? __builtin_clzll((unsigned long long)v) : 64; }
static inline int __ffs(int v) { return __builtin_ffs(v); }
static inline int __ffsll(long long v) { return __builtin_ffsll(v); }
static inline unsigned __brev(unsigned v) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
    return r;
}
// The fast-math intrinsics: the host's accurate functions (the emulator checks logic, not ulps)
// (macros: glibc declares functions of these names for its own use)
#define __expf(x) ::expf((float)(x))
#define __logf(x) ::logf((float)(x))
#define __sinf(x) ::sinf((float)(x))
#define __cosf(x) ::cosf((float)(x))
#define __powf(a, b) ::powf((float)(a), (float)(b))
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
