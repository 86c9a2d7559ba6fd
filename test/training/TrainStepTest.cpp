// Train steps compiled by kilnc --train and driven through the C API alone:
// each optimizer, schedule and regularizer against its formula on a linear
// model, a small classifier whose loss must fall, and convolution weight
// gradients against a direct sum.
#include "test/runtime/TestUtil.h"
#include "test/training/TrainLoop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

namespace {

using kiln::test::TrainLoop;

std::string compile(const kiln::test::TempDir &dir, const std::string &model,
                    std::vector<std::string> flags) {
  std::string out = dir.file("step.kiln");
  std::vector<std::string> args = {KILNC_PATH, std::string(KILN_TRAINING_INPUTS) + "/" + model,
                                   "--train", "-o", out};
  args.insert(args.end(), flags.begin(), flags.end());
  auto result = kiln::test::runCommand(args);
  EXPECT_EQ(result.exitCode, 0) << result.stdErr;
  return out;
}

//===----------------------------------------------------------------------===//
// Optimizers and schedules against their formulas
//===----------------------------------------------------------------------===//

/// The hyperparameters a case sets, in double precision.
struct Hyper {
  std::string optimizer = "sgd", schedule = "constant";
  double lr = 0.01, momentum = 0.9, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double weightDecay = 0.01, decayRate = 0.95, l2 = 0, clip = 0, ema = 0, minLr = 0;
  int64_t decaySteps = 1000, totalSteps = 0, warmup = 0;
  bool staircase = false;
};

struct OptimizerCase {
  std::string name;
  std::vector<std::string> flags;
  Hyper hyper;
};

void PrintTo(const OptimizerCase &c, std::ostream *os) { *os << c.name; }

double learningRate(const Hyper &h, double step) {
  double lr = h.lr;
  if (h.schedule == "exponential" || h.schedule == "step") {
    double e = step / h.decaySteps;
    if (h.staircase || h.schedule == "step")
      e = std::floor(e);
    lr *= std::pow(h.decayRate, e);
  } else if (h.schedule == "cosine") {
    double t = std::min(step, double(h.totalSteps)) / h.totalSteps;
    lr = h.minLr + (h.lr - h.minLr) * 0.5 * (1 + std::cos(M_PI * t));
  }
  if (h.warmup > 0)
    lr *= std::min(1.0, (step + 1) / h.warmup);
  return lr;
}

class OptimizerFormula : public testing::TestWithParam<OptimizerCase> {};

// y = x w (x 4x3, w 3x2), loss = mean((y - t)^2) + l2/2 |w|^2, so
// dloss/dw = 2/8 x^T (x w - t) + l2 w. Seven steps of the compiled update
// against the same recurrences in double precision.
TEST_P(OptimizerFormula, MatchesReference) {
  const OptimizerCase &c = GetParam();
  const Hyper &h = c.hyper;
  kiln::test::TempDir dir;
  std::vector<std::string> flags = {"--loss=mse"};
  flags.insert(flags.end(), c.flags.begin(), c.flags.end());
  TrainLoop loop(compile(dir, "linear.mlir", flags));

  const double x[4][3] = {{0.5, -1, 0.25}, {1, 0.5, -0.5}, {-0.75, 0.25, 1}, {0.1, 0.9, -0.3}};
  const double t[4][2] = {{1, -1}, {0.5, 0.25}, {-0.5, 1}, {0.2, 0.4}};
  double w[3][2] = {{0.3, -0.2}, {0.1, 0.4}, {-0.5, 0.6}};
  double m[3][2] = {}, v[3][2] = {}, avg[3][2];
  std::memcpy(avg, w, sizeof w);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      loop.input<float>("x")[i * 3 + j] = float(x[i][j]);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      loop.input<float>("labels")[i * 2 + j] = float(t[i][j]);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      loop.input<float>("w")[i * 2 + j] = float(w[i][j]);
      if (loop.hasInput("ema/w"))
        loop.input<float>("ema/w")[i * 2 + j] = float(w[i][j]);
    }

  for (int step = 0; step < 7; ++step) {
    // Reference loss and gradient.
    double r[4][2], loss = 0, g[3][2] = {}, norm = 0;
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < 2; ++k) {
        r[i][k] = -t[i][k];
        for (int j = 0; j < 3; ++j)
          r[i][k] += x[i][j] * w[j][k];
        loss += r[i][k] * r[i][k] / 8;
      }
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) {
        loss += h.l2 / 2 * w[j][k] * w[j][k];
        for (int i = 0; i < 4; ++i)
          g[j][k] += 2.0 / 8 * x[i][j] * r[i][k];
        g[j][k] += h.l2 * w[j][k];
        norm += g[j][k] * g[j][k];
      }
    double scale = h.clip > 0 ? h.clip / std::max(std::sqrt(norm), h.clip) : 1;
    double lr = learningRate(h, step);
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) {
        double gk = g[j][k] * scale;
        if (h.optimizer == "sgd") {
          w[j][k] -= lr * gk;
        } else if (h.optimizer == "momentum" || h.optimizer == "nesterov") {
          v[j][k] = h.momentum * v[j][k] + gk;
          w[j][k] -= lr * (h.optimizer == "nesterov" ? gk + h.momentum * v[j][k] : v[j][k]);
        } else {
          m[j][k] = h.beta1 * m[j][k] + (1 - h.beta1) * gk;
          v[j][k] = h.beta2 * v[j][k] + (1 - h.beta2) * gk * gk;
          double mhat = m[j][k] / (1 - std::pow(h.beta1, step + 1));
          double vhat = v[j][k] / (1 - std::pow(h.beta2, step + 1));
          if (h.optimizer == "adamw")
            w[j][k] *= 1 - lr * h.weightDecay;
          w[j][k] -= lr * mhat / (std::sqrt(vhat) + h.epsilon);
        }
        if (h.ema > 0) {
          double d = std::min(h.ema, (1.0 + step) / (10.0 + step));
          avg[j][k] -= (1 - d) * (avg[j][k] - w[j][k]);
        }
      }

    float compiled = loop.step();
    EXPECT_NEAR(compiled, loss, 1e-5 * (1 + std::fabs(loss))) << "loss at step " << step;
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) {
        EXPECT_NEAR(loop.state<float>("w")[j * 2 + k], w[j][k], 2e-5 * (1 + std::fabs(w[j][k])))
            << "w[" << j << "][" << k << "] after step " << step;
        if (h.ema > 0)
          EXPECT_NEAR(loop.state<float>("ema/w")[j * 2 + k], avg[j][k], 2e-5)
              << "ema/w[" << j << "][" << k << "] after step " << step;
      }
    EXPECT_EQ(loop.state<int64_t>("step")[0], step + 1);
  }
}

std::vector<OptimizerCase> optimizerCases() {
  std::vector<OptimizerCase> cases;
  auto add = [&](std::string name, std::vector<std::string> flags, std::function<void(Hyper &)> set) {
    Hyper h;
    set(h);
    cases.push_back({std::move(name), std::move(flags), h});
  };
  add("sgd", {"--learning-rate=0.1"}, [](Hyper &h) { h.lr = 0.1; });
  add("momentum", {"--optimizer=momentum", "--learning-rate=0.05", "--momentum=0.8"},
      [](Hyper &h) { h.optimizer = "momentum", h.lr = 0.05, h.momentum = 0.8; });
  add("nesterov", {"--optimizer=nesterov", "--learning-rate=0.05"},
      [](Hyper &h) { h.optimizer = "nesterov", h.lr = 0.05; });
  add("adam", {"--optimizer=adam", "--learning-rate=0.02", "--beta2=0.99"},
      [](Hyper &h) { h.optimizer = "adam", h.lr = 0.02, h.beta2 = 0.99; });
  add("adamw", {"--optimizer=adamw", "--learning-rate=0.02", "--weight-decay=0.5"},
      [](Hyper &h) { h.optimizer = "adamw", h.lr = 0.02, h.weightDecay = 0.5; });
  add("exponential_decay", {"--learning-rate=0.2", "--lr-schedule=exponential", "--decay-rate=0.5", "--decay-steps=3"},
      [](Hyper &h) { h.lr = 0.2, h.schedule = "exponential", h.decayRate = 0.5, h.decaySteps = 3; });
  add("exponential_staircase", {"--learning-rate=0.2", "--lr-schedule=exponential", "--decay-rate=0.5", "--decay-steps=3", "--staircase=true"},
      [](Hyper &h) { h.lr = 0.2, h.schedule = "exponential", h.decayRate = 0.5, h.decaySteps = 3, h.staircase = true; });
  add("step_schedule", {"--learning-rate=0.2", "--lr-schedule=step", "--decay-rate=0.1", "--decay-steps=2"},
      [](Hyper &h) { h.lr = 0.2, h.schedule = "step", h.decayRate = 0.1, h.decaySteps = 2; });
  add("cosine_warmup", {"--learning-rate=0.2", "--lr-schedule=cosine", "--total-steps=5", "--min-learning-rate=0.01", "--warmup-steps=3"},
      [](Hyper &h) { h.lr = 0.2, h.schedule = "cosine", h.totalSteps = 5, h.minLr = 0.01, h.warmup = 3; });
  add("l2_and_clipping", {"--learning-rate=0.1", "--l2=0.3", "--clip-norm=0.2"},
      [](Hyper &h) { h.lr = 0.1, h.l2 = 0.3, h.clip = 0.2; });
  add("moving_average", {"--learning-rate=0.1", "--ema-decay=0.5"},
      [](Hyper &h) { h.lr = 0.1, h.ema = 0.5; });
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Updates, OptimizerFormula, testing::ValuesIn(optimizerCases()),
                         [](const testing::TestParamInfo<OptimizerCase> &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// A classifier learns
//===----------------------------------------------------------------------===//

// 16 points of 3 classes, each class around its own centre; the MLP of
// Inputs/mlp.mlir (initial weights from its initializers, passed in here as
// a C caller would) trained for 150 steps of momentum SGD. The loss must
// fall below a tenth of its start and every point be classified right.
TEST(TrainStep, ClassifierLossFalls) {
  kiln::test::TempDir dir;
  TrainLoop loop(compile(dir, "mlp.mlir", {"--optimizer=momentum", "--learning-rate=0.1"}));
  // 2 weights, 2 biases, 4 momenta and the step counter.
  EXPECT_EQ(loop.stateCount(), 9u);
  const float centres[3][4] = {{1, 0, 0, 1}, {-1, 1, 0, 0}, {0, -1, 1, -1}};
  uint32_t seed = 99;
  auto uniform = [&]() { // [-0.5, 0.5)
    seed = seed * 1664525u + 1013904223u;
    return float(seed >> 8) / float(1 << 24) - 0.5f;
  };
  for (int i = 0; i < 16; ++i) {
    loop.input<int64_t>("labels")[i] = i % 3;
    for (int j = 0; j < 4; ++j)
      loop.input<float>("x")[i * 4 + j] = centres[i % 3][j] + 0.5f * uniform();
  }
  const char *weights[] = {"fc1.weight", "fc2.weight"};
  for (const char *name : weights) { // small random starting weights
    size_t n = std::string(name) == "fc1.weight" ? 32 : 24;
    for (size_t i = 0; i < n; ++i)
      loop.input<float>(name)[i] = uniform();
  }
  float first = loop.step();
  float last = first;
  for (int step = 1; step < 150; ++step)
    last = loop.step();
  EXPECT_LT(last, first / 10) << "loss went from " << first << " to " << last;
  RecordProperty("loss", std::to_string(first) + " -> " + std::to_string(last));
  EXPECT_EQ(loop.state<int64_t>("step")[0], 150);
  for (int i = 0; i < 16; ++i) {
    const float *logits = loop.output<float>("logits") + i * 3;
    EXPECT_EQ(std::max_element(logits, logits + 3) - logits, i % 3) << "point " << i;
  }
}

// The init entry gives the model's initializers and zeros; after training,
// eval on the state gives the logits the next step computes before its update.
TEST(TrainStep, InitAndEvalEntries) {
  kiln::test::TempDir dir;
  TrainLoop loop(compile(dir, "mlp.mlir", {"--optimizer=momentum", "--learning-rate=0.1"}));
  std::map<std::string, std::vector<unsigned char>> initial;
  loop.runEntry("init", initial);
  ASSERT_EQ(initial.size(), loop.stateCount());
  // fc1.weight's first element in Inputs/mlp.mlir, biases zero, slots zero, step zero.
  EXPECT_FLOAT_EQ(reinterpret_cast<const float *>(initial["fc1.weight"].data())[0], -0.1762f);
  for (const char *zero : {"fc1.bias", "momentum/fc2.weight", "step"})
    for (unsigned char byte : initial[zero])
      EXPECT_EQ(byte, 0) << zero;
  for (auto &[name, value] : initial)
    loop.inputBuffer(name) = value;
  for (int i = 0; i < 16; ++i) {
    loop.input<int64_t>("labels")[i] = i % 3;
    for (int j = 0; j < 4; ++j)
      loop.input<float>("x")[i * 4 + j] = 0.1f * float((i * 7 + j * 3) % 11) - 0.5f;
  }
  for (int step = 0; step < 20; ++step)
    loop.step();
  std::map<std::string, std::vector<unsigned char>> evaluated;
  loop.runEntry("eval", evaluated);
  loop.step();
  const float *fromEval = reinterpret_cast<const float *>(evaluated["logits"].data());
  for (int i = 0; i < 16 * 3; ++i)
    EXPECT_NEAR(fromEval[i], loop.output<float>("logits")[i], 1e-5) << "logit " << i;
}

} // namespace

//===----------------------------------------------------------------------===//
// Convolution weight gradients against a direct sum
//===----------------------------------------------------------------------===//

struct WeightGradientCase {
  std::string name;
  int64_t images, channels, size, filters, kernel, stride, pad;
};

void PrintTo(const WeightGradientCase &c, std::ostream *os) { *os << c.name; }

class ConvolutionWeightGradient : public testing::TestWithParam<WeightGradientCase> {};

// loss = sum(conv(x, w) * c), so dloss/dw[f][i][a][b] = sum over images and
// positions of c[n][f][h][w] xpad[n][i][h s + a][w s + b], whatever w is;
// one SGD step at learning rate 1 leaves w - dloss/dw. Seven input channels
// make the CPU's weight-gradient tiles (runs of input channels as the columns
// of one product) end in a partial tile on 2 to 4 threads; a 1x1 filter at
// stride 2 is the downsampling shortcut's gradient, which has no output
// position once unit dimensions are folded.
TEST_P(ConvolutionWeightGradient, MatchesDirectSum) {
  const WeightGradientCase &c = GetParam();
  int64_t out = (c.size + 2 * c.pad - c.kernel) / c.stride + 1;
  auto shape = [](std::initializer_list<int64_t> dims) {
    std::string text;
    for (int64_t d : dims)
      text += std::to_string(d) + "x";
    return text + "f32";
  };
  std::string x = shape({c.images, c.channels, c.size, c.size});
  std::string w = shape({c.filters, c.channels, c.kernel, c.kernel});
  std::string y = shape({c.images, c.filters, out, out});
  std::string s = std::to_string(c.stride), p = std::to_string(c.pad);
  std::string model =
      "func.func @main(%x: tensor<" + x + "> {kiln.name = \"x\"}, %c: tensor<" + y +
      "> {kiln.name = \"c\"}) -> (tensor<f32> {kiln.name = \"loss\"}) {\n"
      "  %w = kiln.constant dense<0.5> : tensor<" + w + "> loc(\"initializer 'w'\")\n"
      "  %y = kiln.conv %x, %w {strides = array<i64: " + s + ", " + s + ">, pads = array<i64: " +
      p + ", " + p + ", " + p + ", " + p + ">, dilations = array<i64: 1, 1>} : (tensor<" + x +
      ">, tensor<" + w + ">) -> tensor<" + y + ">\n"
      "  %p = kiln.mul %y, %c : (tensor<" + y + ">, tensor<" + y + ">) -> tensor<" + y + ">\n"
      "  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<" +
      y + ">) -> tensor<f32>\n"
      "  return %l : tensor<f32>\n}\n";
  kiln::test::TempDir dir;
  kiln::test::writeFile(dir.file("conv.mlir"), model);
  std::string step = dir.file("step.kiln");
  auto result = kiln::test::runCommand({KILNC_PATH, dir.file("conv.mlir"), "--train",
                                        "--loss=output", "--learning-rate=1", "-o", step});
  ASSERT_EQ(result.exitCode, 0) << result.stdErr;
  TrainLoop loop(step);

  uint32_t seed = 7;
  auto uniform = [&]() { // [-0.5, 0.5)
    seed = seed * 1664525u + 1013904223u;
    return float(seed >> 8) / float(1 << 24) - 0.5f;
  };
  int64_t xCount = c.images * c.channels * c.size * c.size;
  int64_t yCount = c.images * c.filters * out * out;
  std::vector<float> image(xCount), weights(yCount);
  for (float &v : image)
    v = uniform();
  for (float &v : weights)
    v = uniform();
  std::copy(image.begin(), image.end(), loop.input<float>("x"));
  std::copy(weights.begin(), weights.end(), loop.input<float>("c"));
  std::fill_n(loop.input<float>("w"), c.filters * c.channels * c.kernel * c.kernel, 0.5f);
  loop.step();

  const float *updated = loop.state<float>("w");
  double worst = 0;
  for (int64_t f = 0; f < c.filters; ++f)
    for (int64_t i = 0; i < c.channels; ++i)
      for (int64_t a = 0; a < c.kernel; ++a)
        for (int64_t b = 0; b < c.kernel; ++b) {
          double sum = 0;
          for (int64_t n = 0; n < c.images; ++n)
            for (int64_t h = 0; h < out; ++h)
              for (int64_t v = 0; v < out; ++v) {
                int64_t row = h * c.stride + a - c.pad, col = v * c.stride + b - c.pad;
                if (row < 0 || row >= c.size || col < 0 || col >= c.size)
                  continue;
                sum += double(weights[((n * c.filters + f) * out + h) * out + v]) *
                       image[((n * c.channels + i) * c.size + row) * c.size + col];
              }
          int64_t k = ((f * c.channels + i) * c.kernel + a) * c.kernel + b;
          double got = 0.5 - double(updated[k]);
          worst = std::max(worst, std::fabs(got - sum) / (1 + std::fabs(sum)));
        }
  // float32 sums of up to 12,800 products of [-0.5, 0.5) values, in an order
  // that depends on the tiles: 9e-6 measured on 2 threads (AVX2). A wrong
  // product or a lost partial tile is off by whole terms.
  EXPECT_LT(worst, 1e-4);
  RecordProperty("worst_error", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvolutionWeightGradient,
    testing::Values(WeightGradientCase{"k3_odd_channels", 8, 7, 40, 16, 3, 1, 1},
                    WeightGradientCase{"k1_stride2", 8, 7, 40, 16, 1, 2, 0},
                    WeightGradientCase{"k3_stride2", 4, 12, 15, 8, 3, 2, 1}),
    [](const auto &info) { return info.param.name; });
