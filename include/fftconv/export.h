/* Symbol export of the fftconv library: only what the public headers declare with FFTCONV_API is
   visible outside libfftconv.so; everything else (the implementation, and any static C++ runtime
   the toolchain links in) is hidden, so the library can share a process with other C++ code
   (PyTorch, say) whatever their C++ runtimes. C and C++ alike. */
#ifndef FFTCONV_EXPORT_H_
#define FFTCONV_EXPORT_H_

#if defined(_WIN32)
#define FFTCONV_API
#elif defined(__GNUC__) || defined(__clang__)
#define FFTCONV_API __attribute__((visibility("default")))
#else
#define FFTCONV_API
#endif

#endif /* FFTCONV_EXPORT_H_ */
