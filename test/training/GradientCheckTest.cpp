// Checks every gradient rule against central differences: each case of
// Inputs/gradcheck.mlir is differentiated by kiln-autodiff, compiled by kilnc and run.
#include "kiln/artifact.h"
#include "test/runtime/TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

namespace {

using kiln::rt::Artifact;
using kiln::rt::Tensor;

struct GradCase {
  std::string name, text;
  double low = -1, high = 1, step = 1e-6, tolerance = 1e-6;
};

// gtest prints a failing case by its name, not its bytes.
void PrintTo(const GradCase &c, std::ostream *os) { *os << c.name; }

std::vector<GradCase> readCases() {
  std::ifstream file(KILN_GRADCHECK_CASES);
  std::stringstream all;
  all << file.rdbuf();
  std::vector<GradCase> cases;
  std::string text = all.str();
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find("// -----", begin);
    GradCase c;
    c.text = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    std::istringstream lines(c.text);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string slashes, key;
      words >> slashes >> key;
      if (key == "case:")
        words >> c.name;
      else if (key == "range:")
        words >> c.low >> c.high;
      else if (key == "step:")
        words >> c.step;
      else if (key == "tolerance:")
        words >> c.tolerance;
    }
    if (!c.name.empty())
      cases.push_back(c);
    begin = end == std::string::npos ? text.size() : end + 8;
  }
  return cases;
}

void fill(Tensor &tensor, std::mt19937 &rng, double low, double high) {
  std::uniform_real_distribution<double> uniform(low, high);
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    double v = uniform(rng);
    if (tensor.dtype() == KILN_DTYPE_F64)
      tensor.dataAs<double>()[i] = v;
    else
      tensor.dataAs<float>()[i] = static_cast<float>(v);
  }
}

double &at(Tensor &tensor, int64_t i) { return tensor.dataAs<double>()[i]; }

class GradientCheck : public testing::TestWithParam<GradCase> {};

TEST_P(GradientCheck, MatchesCentralDifferences) {
  const GradCase &c = GetParam();
  kiln::test::TempDir dir;
  kiln::test::writeFile(dir.file("case.mlir"), c.text);
  auto opt = kiln::test::runCommand(
      {KILN_OPT_PATH, dir.file("case.mlir"), "-o", dir.file("grad.mlir"),
       "--pass-pipeline=builtin.module(func.func(kiln-autodiff{wrt=x.*}))"});
  ASSERT_EQ(opt.exitCode, 0) << opt.stdErr;
  auto kilnc = kiln::test::runCommand({KILNC_PATH, dir.file("grad.mlir"), "-o", dir.file("grad.kiln")});
  ASSERT_EQ(kilnc.exitCode, 0) << kilnc.stdErr;
  Artifact artifact = Artifact::open(dir.file("grad.kiln"));

  std::mt19937 rng(1234);
  std::vector<Tensor> inputs;
  std::vector<size_t> differentiated;
  for (const auto &spec : artifact.inputs()) {
    inputs.emplace_back(spec.dtype, spec.dims, spec.name);
    bool isX = spec.name[0] == 'x';
    fill(inputs.back(), rng, isX ? c.low : -1.0, isX ? c.high : 1.0);
    if (isX) {
      ASSERT_EQ(spec.dtype, KILN_DTYPE_F64) << "gradient checks run in f64";
      differentiated.push_back(inputs.size() - 1);
    }
  }
  ASSERT_EQ(artifact.outputs().size(), 1 + differentiated.size());
  std::vector<Tensor> outputs = artifact.allocateOutputs();
  auto loss = [&]() {
    std::vector<const Tensor *> in;
    std::vector<Tensor *> out;
    for (const Tensor &t : inputs)
      in.push_back(&t);
    for (Tensor &t : outputs)
      out.push_back(&t);
    artifact.run(in, out);
    return outputs[0].dataAs<double>()[0];
  };
  loss();
  std::vector<Tensor> grads(outputs.begin() + 1, outputs.end());
  for (size_t k = 0; k < differentiated.size(); ++k) {
    Tensor &x = inputs[differentiated[k]];
    for (int64_t i = 0; i < x.numElements(); ++i) {
      double saved = at(x, i);
      at(x, i) = saved + c.step;
      double up = loss();
      at(x, i) = saved - c.step;
      double down = loss();
      at(x, i) = saved;
      double numeric = (up - down) / (2 * c.step);
      double analytic = grads[k].dataAs<double>()[i];
      EXPECT_NEAR(analytic, numeric, c.tolerance * (1 + std::fabs(numeric)))
          << "d loss / d " << x.name() << "[" << i << "] at " << saved;
    }
  }
}

std::string caseName(const testing::TestParamInfo<GradCase> &info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Rules, GradientCheck, testing::ValuesIn(readCases()), caseName);

} // namespace
