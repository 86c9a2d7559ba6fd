//===- Progress.h - kiln-train's report on the terminal ---------*- C++ -*-===//
//
// Lines go to stdout as the seeds print them; on a terminal a progress bar
// is redrawn under them on stderr, and cleared before each line.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_TRAIN_PROGRESS_H
#define KILN_TOOLS_KILN_TRAIN_PROGRESS_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace kiln::train {

// "1h02m", "3m07s", "12s".
inline std::string formatDuration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7)
    return "?";
  auto s = static_cast<int64_t>(seconds + 0.5);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof(text), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  else if (s >= 60)
    std::snprintf(text, sizeof(text), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else
    std::snprintf(text, sizeof(text), "%llds", static_cast<long long>(s));
  return text;
}

class Progress {
public:
  explicit Progress(bool bar) : bar_(bar) {}

  // A line of the log, on stdout.
  void line(const std::string &text) {
    clear();
    std::fputs(text.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }

  // Redraws the bar: "[=====>      ] 1200/5000 epoch 3  loss 0.412  ETA 1m12s".
  void update(int64_t step, int64_t total, int64_t epoch, double loss, double eta) {
    if (!bar_ || total <= 0)
      return;
    constexpr int kWidth = 30;
    int filled = static_cast<int>(kWidth * static_cast<double>(step) / total);
    std::string bar(kWidth, ' ');
    for (int i = 0; i < filled && i < kWidth; ++i)
      bar[i] = '=';
    if (filled < kWidth)
      bar[filled] = '>';
    std::fprintf(stderr, "\r[%s] %lld/%lld epoch %lld  loss %.4f  ETA %s\033[K", bar.c_str(),
                 static_cast<long long>(step), static_cast<long long>(total),
                 static_cast<long long>(epoch + 1), loss, formatDuration(eta).c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

  void clear() {
    if (drawn_) {
      std::fputs("\r\033[K", stderr);
      std::fflush(stderr);
      drawn_ = false;
    }
  }

private:
  bool bar_;
  bool drawn_ = false;
};

} // namespace kiln::train

#endif // KILN_TOOLS_KILN_TRAIN_PROGRESS_H
