// ---- sdfg prelude: the semantics of the IR's operations, for host and device ----
#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
// NVRTC has neither <cmath> nor the GCC builtins: spell the bit patterns.
#define NAN __longlong_as_double(0x7ff8000000000000ULL)
#define INFINITY __longlong_as_double(0x7ff0000000000000ULL)
#else
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#endif
#define SDFG_HD __host__ __device__ inline

namespace sdfg {

template <class T> struct complex {
  T re, im;
  SDFG_HD complex() : re(0), im(0) {}
  SDFG_HD complex(T r) : re(r), im(0) {}
  SDFG_HD complex(T r, T i) : re(r), im(i) {}
  template <class U> SDFG_HD explicit complex(const complex<U>& o) : re((T)o.re), im((T)o.im) {}
};
template <class T> SDFG_HD complex<T> operator+(complex<T> a, complex<T> b) { return complex<T>(a.re + b.re, a.im + b.im); }
template <class T> SDFG_HD complex<T> operator-(complex<T> a, complex<T> b) { return complex<T>(a.re - b.re, a.im - b.im); }
template <class T> SDFG_HD complex<T> operator-(complex<T> a) { return complex<T>(-a.re, -a.im); }
template <class T> SDFG_HD complex<T> operator*(complex<T> a, complex<T> b) { return complex<T>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); }
template <class T> SDFG_HD complex<T> operator/(complex<T> a, complex<T> b) {
  T d = b.re * b.re + b.im * b.im;
  return complex<T>((a.re * b.re + a.im * b.im) / d, (a.im * b.re - a.re * b.im) / d);
}
template <class T> SDFG_HD bool operator==(complex<T> a, complex<T> b) { return a.re == b.re && a.im == b.im; }
template <class T> SDFG_HD bool operator!=(complex<T> a, complex<T> b) { return !(a == b); }

// Python's integer floor division and modulo (the result has the sign of the divisor).
template <class T> SDFG_HD T floordiv(T a, T b) {
  T q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
template <class T> SDFG_HD T mod(T a, T b) {
  T r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
SDFG_HD float floordiv(float a, float b) { return ::floorf(a / b); }
SDFG_HD double floordiv(double a, double b) { return ::floor(a / b); }
SDFG_HD float mod(float a, float b) { float m = ::fmodf(a, b); return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; }
SDFG_HD double mod(double a, double b) { double m = ::fmod(a, b); return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; }
SDFG_HD uint8_t floordiv(uint8_t a, uint8_t b) { return a / b; }
SDFG_HD uint16_t floordiv(uint16_t a, uint16_t b) { return a / b; }
SDFG_HD uint32_t floordiv(uint32_t a, uint32_t b) { return a / b; }
SDFG_HD uint64_t floordiv(uint64_t a, uint64_t b) { return a / b; }
SDFG_HD uint8_t mod(uint8_t a, uint8_t b) { return a % b; }
SDFG_HD uint16_t mod(uint16_t a, uint16_t b) { return a % b; }
SDFG_HD uint32_t mod(uint32_t a, uint32_t b) { return a % b; }
SDFG_HD uint64_t mod(uint64_t a, uint64_t b) { return a % b; }
// Symbolic (int64) arithmetic: not overloaded, so mixed `long`/`long long` operands convert.
SDFG_HD int64_t ifloordiv(int64_t a, int64_t b) { return floordiv<int64_t>(a, b); }
SDFG_HD int64_t imod(int64_t a, int64_t b) { return mod<int64_t>(a, b); }
SDFG_HD int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
SDFG_HD int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
// Integer powers by squaring; a negative exponent truncates as C would.
template <class T> SDFG_HD T ipow(T base, T exp) {
  if (exp < 0) return (T)::pow((double)base, (double)exp);
  T r = 1;
  while (exp > 0) { if (exp & 1) r *= base; base *= base; exp >>= 1; }
  return r;
}
template <class T> SDFG_HD T pow(T a, T b) { return ipow(a, b); }
SDFG_HD int64_t ipow64(int64_t a, int64_t b) { return ipow<int64_t>(a, b); }
// x ** N for an exponent the emitter knows (0 <= N <= 64): multiplications
// by squaring, as NumPy's `x ** 2` (a square) and its complex power by a
// small integer are, instead of a call of pow (a full-precision pow for
// reals, exp(N * log(x)) for complex values).
template <int N, class T> SDFG_HD T integer_power(T x) {
  if constexpr (N == 0) return T(1);
  else if constexpr (N == 1) return x;
  else if constexpr (N % 2 == 0) {
    const T h = integer_power<N / 2>(x);
    return h * h;
  } else return x * integer_power<N - 1>(x);
}
SDFG_HD float pow(float a, float b) { return ::powf(a, b); }
SDFG_HD double pow(double a, double b) { return ::pow(a, b); }

SDFG_HD float sqrt(float x) { return ::sqrtf(x); }
SDFG_HD double sqrt(double x) { return ::sqrt(x); }
SDFG_HD float exp(float x) { return ::expf(x); }
SDFG_HD double exp(double x) { return ::exp(x); }
SDFG_HD float log(float x) { return ::logf(x); }
SDFG_HD double log(double x) { return ::log(x); }
SDFG_HD float sin(float x) { return ::sinf(x); }
SDFG_HD double sin(double x) { return ::sin(x); }
SDFG_HD float cos(float x) { return ::cosf(x); }
SDFG_HD double cos(double x) { return ::cos(x); }
SDFG_HD float tan(float x) { return ::tanf(x); }
SDFG_HD double tan(double x) { return ::tan(x); }
SDFG_HD float tanh(float x) { return ::tanhf(x); }
SDFG_HD double tanh(double x) { return ::tanh(x); }
SDFG_HD float atan(float x) { return ::atanf(x); }
SDFG_HD double atan(double x) { return ::atan(x); }
SDFG_HD float atan2(float y, float x) { return ::atan2f(y, x); }
SDFG_HD double atan2(double y, double x) { return ::atan2(y, x); }
#if !defined(__CUDACC_RTC__)
// The host's clock (GT4Py's timers): host code only, as the IR says.
inline int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::high_resolution_clock::now().time_since_epoch())
      .count();
}
#endif
SDFG_HD float fmod(float a, float b) { return ::fmodf(a, b); }
SDFG_HD double fmod(double a, double b) { return ::fmod(a, b); }
// The rest of C's real functions, in both precisions.
#define SDFG_REAL_FN(name) \
  SDFG_HD float name(float x) { return ::name##f(x); } \
  SDFG_HD double name(double x) { return ::name(x); }
SDFG_REAL_FN(log2) SDFG_REAL_FN(log10) SDFG_REAL_FN(log1p) SDFG_REAL_FN(expm1)
SDFG_REAL_FN(exp2) SDFG_REAL_FN(sinh) SDFG_REAL_FN(cosh) SDFG_REAL_FN(asin)
SDFG_REAL_FN(acos) SDFG_REAL_FN(asinh) SDFG_REAL_FN(acosh) SDFG_REAL_FN(atanh)
SDFG_REAL_FN(cbrt) SDFG_REAL_FN(trunc) SDFG_REAL_FN(rint) SDFG_REAL_FN(erf)
#undef SDFG_REAL_FN
SDFG_HD float frexp_mantissa(float x) { int e; return ::frexpf(x, &e); }
SDFG_HD double frexp_mantissa(double x) { int e; return ::frexp(x, &e); }
SDFG_HD int32_t frexp_exponent(float x) { int e = 0; ::frexpf(x, &e); return x - x == 0 ? e : 0; }
SDFG_HD int32_t frexp_exponent(double x) { int e = 0; ::frexp(x, &e); return x - x == 0 ? e : 0; }
SDFG_HD float floor(float x) { return ::floorf(x); }
SDFG_HD double floor(double x) { return ::floor(x); }
SDFG_HD float ceil(float x) { return ::ceilf(x); }
SDFG_HD double ceil(double x) { return ::ceil(x); }
SDFG_HD float abs(float x) { return ::fabsf(x); }
SDFG_HD double abs(double x) { return ::fabs(x); }
template <class T> SDFG_HD T abs(T x) { return x < 0 ? -x : x; }
SDFG_HD bool isnan(float x) { return x != x; }
SDFG_HD bool isnan(double x) { return x != x; }
// NumPy's minimum/maximum: NaN propagates.
template <class T> SDFG_HD T minimum(T a, T b) { return isnan(a) || isnan(b) ? (T)NAN : (a < b ? a : b); }
template <class T> SDFG_HD T maximum(T a, T b) { return isnan(a) || isnan(b) ? (T)NAN : (a > b ? a : b); }
#define SDFG_INT_MINMAX(T) \
  SDFG_HD T minimum(T a, T b) { return a < b ? a : b; } \
  SDFG_HD T maximum(T a, T b) { return a > b ? a : b; }
SDFG_INT_MINMAX(bool) SDFG_INT_MINMAX(int8_t) SDFG_INT_MINMAX(int16_t) SDFG_INT_MINMAX(int32_t)
SDFG_INT_MINMAX(int64_t) SDFG_INT_MINMAX(uint8_t) SDFG_INT_MINMAX(uint16_t)
SDFG_INT_MINMAX(uint32_t) SDFG_INT_MINMAX(uint64_t)

template <class T> SDFG_HD T real(complex<T> z) { return z.re; }
template <class T> SDFG_HD T imag(complex<T> z) { return z.im; }
template <class T> SDFG_HD complex<T> conj(complex<T> z) { return complex<T>(z.re, -z.im); }
template <class T> SDFG_HD T abs(complex<T> z) { return sqrt(z.re * z.re + z.im * z.im); }
template <class T> SDFG_HD bool isnan(complex<T> z) { return isnan(z.re) || isnan(z.im); }
template <class T> SDFG_HD complex<T> make_complex(T re, T im) { return complex<T>(re, im); }
template <class T> SDFG_HD complex<T> exp(complex<T> z) { T e = exp(z.re); return complex<T>(e * cos(z.im), e * sin(z.im)); }
template <class T> SDFG_HD complex<T> log(complex<T> z) { return complex<T>(log(abs(z)), atan2(z.im, z.re)); }
template <class T> SDFG_HD complex<T> sqrt(complex<T> z) {
  T r = abs(z);
  T re = sqrt((r + z.re) / 2);
  T im = sqrt((r - z.re) / 2);
  return complex<T>(re, z.im < 0 ? -im : im);
}
template <class T> SDFG_HD complex<T> sin(complex<T> z) { return complex<T>(sin(z.re) * ::cosh(z.im), cos(z.re) * ::sinh(z.im)); }
template <class T> SDFG_HD complex<T> cos(complex<T> z) { return complex<T>(cos(z.re) * ::cosh(z.im), -sin(z.re) * ::sinh(z.im)); }
template <class T> SDFG_HD complex<T> tan(complex<T> z) { return sin(z) / cos(z); }
template <class T> SDFG_HD complex<T> tanh(complex<T> z) {
  // tanh(z) = -i tan(i z)
  complex<T> t = tan(complex<T>(-z.im, z.re));
  return complex<T>(t.im, -t.re);
}
// The principal branch, as NumPy's: atan(z) = (i/2) log((i + z) / (i - z)).
template <class T> SDFG_HD complex<T> atan(complex<T> z) {
  complex<T> l = log(complex<T>(z.re, 1 + z.im) / complex<T>(-z.re, 1 - z.im));
  return complex<T>(-l.im / 2, l.re / 2);
}
template <class T> SDFG_HD complex<T> pow(complex<T> a, complex<T> b) {
  if (a.re == 0 && a.im == 0) return complex<T>(b.re == 0 && b.im == 0 ? 1 : 0, 0);
  return exp(b * log(a));
}

template <class To, class From> struct caster { SDFG_HD static To go(From x) { return (To)x; } };
template <class T, class From> struct caster<complex<T>, From> { SDFG_HD static complex<T> go(From x) { return complex<T>((T)x, 0); } };
template <class T, class U> struct caster<complex<T>, complex<U>> { SDFG_HD static complex<T> go(complex<U> x) { return complex<T>(x); } };
template <class To, class From> SDFG_HD To cast(From x) { return caster<To, From>::go(x); }

}  // namespace sdfg

#if !defined(SDFG_HOST_ONLY)
namespace sdfg {
// Write-conflict resolution on the device: native atomics where they exist,
// compare-and-swap loops elsewhere.
template <class T> struct bits;
template <> struct bits<float> { typedef unsigned int type; };
template <> struct bits<double> { typedef unsigned long long type; };
template <> struct bits<int32_t> { typedef unsigned int type; };
template <> struct bits<uint32_t> { typedef unsigned int type; };
template <> struct bits<int64_t> { typedef unsigned long long type; };
template <> struct bits<uint64_t> { typedef unsigned long long type; };

// The first read is atomic too (an addition of zero): a plain read racing
// with other threads' atomics is a data race in the memory model.
template <class T, class F> __device__ inline void atomic_update(T* p, F f) {
  typedef typename bits<T>::type U;
  U* q = (U*)p;
  U old = atomicAdd(q, (U)0), assumed;
  do {
    assumed = old;
    T cur;
    memcpy(&cur, &assumed, sizeof(T));
    T next = f(cur);
    U n;
    memcpy(&n, &next, sizeof(T));
    old = atomicCAS(q, assumed, n);
  } while (old != assumed);
}
__device__ inline void atomic_sum(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_sum(double* p, double v) { atomicAdd(p, v); }
__device__ inline void atomic_sum(int32_t* p, int32_t v) { atomicAdd(p, v); }
__device__ inline void atomic_sum(uint32_t* p, uint32_t v) { atomicAdd(p, v); }
__device__ inline void atomic_sum(int64_t* p, int64_t v) { atomicAdd((unsigned long long*)p, (unsigned long long)v); }
__device__ inline void atomic_sum(uint64_t* p, uint64_t v) { atomicAdd((unsigned long long*)p, (unsigned long long)v); }
template <class T> __device__ inline void atomic_sum(complex<T>* p, complex<T> v) { atomicAdd(&p->re, v.re); atomicAdd(&p->im, v.im); }
template <class T> __device__ inline void atomic_product(T* p, T v) { atomic_update(p, [v](T x) { return x * v; }); }
template <class T> __device__ inline void atomic_min(T* p, T v) { atomic_update(p, [v](T x) { return minimum(x, v); }); }
template <class T> __device__ inline void atomic_max(T* p, T v) { atomic_update(p, [v](T x) { return maximum(x, v); }); }
template <class T> __device__ inline void atomic_bit_and(T* p, T v) { atomic_update(p, [v](T x) { return (T)(x & v); }); }
template <class T> __device__ inline void atomic_bit_or(T* p, T v) { atomic_update(p, [v](T x) { return (T)(x | v); }); }
template <class T> __device__ inline void atomic_bit_xor(T* p, T v) { atomic_update(p, [v](T x) { return (T)(x ^ v); }); }
__device__ inline void atomic_min(int32_t* p, int32_t v) { atomicMin(p, v); }
__device__ inline void atomic_max(int32_t* p, int32_t v) { atomicMax(p, v); }
__device__ inline void atomic_min(uint32_t* p, uint32_t v) { atomicMin(p, v); }
__device__ inline void atomic_max(uint32_t* p, uint32_t v) { atomicMax(p, v); }
// Block reductions (`docs/codegen.md`, "Reductions"). The combinations as
// types, so that one reduction serves every operation and element type.
template <class T> struct op_sum { __device__ static T apply(T a, T b) { return a + b; } };
template <class T> struct op_product { __device__ static T apply(T a, T b) { return a * b; } };
template <class T> struct op_min { __device__ static T apply(T a, T b) { return minimum(a, b); } };
template <class T> struct op_max { __device__ static T apply(T a, T b) { return maximum(a, b); } };
template <class T> struct op_bit_and { __device__ static T apply(T a, T b) { return (T)(a & b); } };
template <class T> struct op_bit_or { __device__ static T apply(T a, T b) { return (T)(a | b); } };
template <class T> struct op_bit_xor { __device__ static T apply(T a, T b) { return (T)(a ^ b); } };
// A warp shuffle of any element type (`SDFG_SHFL_DOWN`, the dialect's own,
// moves 32- and 64-bit words; narrower types travel as int, complex numbers
// as two shuffles).
template <class T> __device__ inline T shfl_down(T v, unsigned int d) { return SDFG_SHFL_DOWN(v, d); }
__device__ inline bool shfl_down(bool v, unsigned int d) { return SDFG_SHFL_DOWN((int)v, d) != 0; }
__device__ inline int8_t shfl_down(int8_t v, unsigned int d) { return (int8_t)SDFG_SHFL_DOWN((int)v, d); }
__device__ inline int16_t shfl_down(int16_t v, unsigned int d) { return (int16_t)SDFG_SHFL_DOWN((int)v, d); }
__device__ inline uint8_t shfl_down(uint8_t v, unsigned int d) { return (uint8_t)SDFG_SHFL_DOWN((unsigned int)v, d); }
__device__ inline uint16_t shfl_down(uint16_t v, unsigned int d) { return (uint16_t)SDFG_SHFL_DOWN((unsigned int)v, d); }
template <class T> __device__ inline complex<T> shfl_down(complex<T> v, unsigned int d) {
  return complex<T>(shfl_down(v.re, d), shfl_down(v.im, d));
}
// The combination of every thread's `v` in the block, returned to every
// thread: a shuffle tree in each warp, then the first thread combines the
// warps' results. Every thread of the block calls it, and a block is whole
// warps (the emitter sizes blocks of thread-block maps so).
template <class Op, class T> __device__ inline T block_reduce(T v) {
  // Raw storage (`__shared__` variables take no constructors), as doubles:
  // aligned for every element type.
  __shared__ double raw[(32 * sizeof(T) + sizeof(double) - 1) / sizeof(double)];
  T* slots = reinterpret_cast<T*>(raw);
  const unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned int warps = blockDim.x * blockDim.y * blockDim.z / warpSize;
  for (int d = warpSize / 2; d > 0; d /= 2) v = Op::apply(v, shfl_down(v, (unsigned int)d));
  if (t % warpSize == 0) slots[t / warpSize] = v;
  __syncthreads();
  if (t == 0) {
    for (unsigned int w = 1; w < warps; ++w) v = Op::apply(v, slots[w]);
    slots[0] = v;
  }
  __syncthreads();
  v = slots[0];
  __syncthreads();
  return v;
}
// A value another block wrote, read past this multiprocessor's cache (a
// volatile load; complex numbers a part at a time).
template <class T> __device__ inline T load_volatile(const T* p) { return *(const volatile T*)p; }
template <class T> __device__ inline complex<T> load_volatile(const complex<T>* p) {
  return complex<T>(load_volatile(&p->re), load_volatile(&p->im));
}
// The combination of every block's `part` (its `block_reduce` total) over
// the grid, for a reduction whose iterations the blocks share: each
// block's first thread stores its part in `parts[blockIdx.x]`, makes it
// visible to the grid, and takes a ticket; the block with the last ticket
// combines the stored parts into `part`, resets the counter for the next
// launch and returns true; every other block returns false, its work done.
// Every thread of the block calls it (the emitter sizes the grid at most
// the length of `parts`, a one-dimensional grid of whole warps).
template <class Op, class T> __device__ inline bool grid_reduce(T& part, T identity, T* parts, unsigned int* tickets) {
  __shared__ unsigned int last;
  const unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  if (t == 0) {
    parts[blockIdx.x] = part;
    __threadfence();
    last = atomicAdd(tickets, 1u) == gridDim.x - 1 ? 1u : 0u;
  }
  __syncthreads();
  if (!last) return false;
  __threadfence();
  T v = identity;
  for (unsigned int b = t; b < gridDim.x; b += blockDim.x * blockDim.y * blockDim.z) v = Op::apply(v, load_volatile(&parts[b]));
  part = block_reduce<Op>(v);
  if (t == 0) atomicExch(tickets, 0u);
  return true;
}
// Helper kernels of the vendor calls; grid-stride loops, so a grid clamped
// to the launch limits covers any size.
// Zeroes the strict upper (`upper`) or lower triangle of a row-major n x n
// matrix with row stride ld: the part a vendor Cholesky leaves as it was.
template <class T> __global__ void zero_triangle(T* a, int64_t n, int64_t ld, int upper) {
  for (int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; i < n; i += (int64_t)gridDim.y * blockDim.y)
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x)
      if (upper ? j > i : j < i) a[i * ld + j] = T(0);
}
// dst = src^T: src is rows x cols with row stride lds, dst cols x rows with
// row stride ldd (the right-hand sides of a vendor solve, to and from
// column-major).
template <class T> __global__ void transpose(T* dst, int64_t ldd, const T* src, int64_t lds, int64_t rows, int64_t cols) {
  for (int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; i < rows; i += (int64_t)gridDim.y * blockDim.y)
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += (int64_t)gridDim.x * blockDim.x)
      dst[j * ldd + i] = src[i * lds + j];
}
// y = beta y over n elements with stride inc (y = 0 for beta = 0, whatever
// y held): a product over an empty inner dimension, which BLAS skips.
template <class T> __global__ void scale(T* y, int64_t n, int64_t inc, T beta) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i * inc] = beta == T(0) ? T(0) : beta * y[i * inc];
}
// Records the first failed factorization of a run: `failed` holds (call
// site, info), `info` is what the factorization just wrote.
__global__ void note_failure(const int* info, int* failed, int site) {
  if (blockIdx.x == 0 && threadIdx.x == 0 && failed[0] == 0 && *info != 0) {
    failed[0] = site;
    failed[1] = *info;
  }
}
}  // namespace sdfg
#else
namespace sdfg {
template <class T> __global__ void zero_triangle(T* a, int64_t n, int64_t ld, int upper);
template <class T> __global__ void transpose(T* dst, int64_t ldd, const T* src, int64_t lds, int64_t rows, int64_t cols);
template <class T> __global__ void scale(T* y, int64_t n, int64_t inc, T beta);
__global__ void note_failure(const int* info, int* failed, int site);
}  // namespace sdfg
#endif
// ---- end of the sdfg prelude ----
