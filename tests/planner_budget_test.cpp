// Budget parsing: every unit of the convention in acprof/budget.h, and errors.
#include "acprof/budget.h"

#include <gtest/gtest.h>

namespace acprof {
namespace {

constexpr int64_t kPeak = 8'000'000'000;  // profiled peak for percentages

TEST(PlannerBudget, PlainBytes) {
  EXPECT_EQ(parseBudget("6442450944", kPeak), 6442450944);
  EXPECT_EQ(parseBudget("512B", kPeak), 512);
  EXPECT_EQ(parseBudget(" 512 b ", kPeak), 512);
}

TEST(PlannerBudget, DecimalUnitsArePowersOfThousand) {
  EXPECT_EQ(parseBudget("64K", kPeak), 64'000);
  EXPECT_EQ(parseBudget("64KB", kPeak), 64'000);
  EXPECT_EQ(parseBudget("512MB", kPeak), 512'000'000);
  EXPECT_EQ(parseBudget("2M", kPeak), 2'000'000);
  EXPECT_EQ(parseBudget("6GB", kPeak), 6'000'000'000);
  EXPECT_EQ(parseBudget("6 gb", kPeak), 6'000'000'000);
  EXPECT_EQ(parseBudget("1G", kPeak), 1'000'000'000);
  EXPECT_EQ(parseBudget("1.5TB", kPeak), 1'500'000'000'000);
}

TEST(PlannerBudget, BinaryUnitsArePowersOf1024) {
  EXPECT_EQ(parseBudget("64KiB", kPeak), 65'536);
  EXPECT_EQ(parseBudget("512MiB", kPeak), 536'870'912);
  EXPECT_EQ(parseBudget("6GiB", kPeak), 6'442'450'944);
  EXPECT_EQ(parseBudget("6 gib", kPeak), 6'442'450'944);
  EXPECT_EQ(parseBudget("1TiB", kPeak), 1'099'511'627'776);
  EXPECT_EQ(parseBudget("1.5KiB", kPeak), 1'536);
}

TEST(PlannerBudget, PercentOfTheProfiledPeak) {
  EXPECT_EQ(parseBudget("60%", kPeak), 4'800'000'000);
  EXPECT_EQ(parseBudget("60 %", kPeak), 4'800'000'000);
  EXPECT_EQ(parseBudget("12.5%", kPeak), 1'000'000'000);
  EXPECT_EQ(parseBudget("33%", 1000), 330);
  EXPECT_EQ(parseBudget("150%", 1000), 1500);
}

// "0.5" is half the peak written as a fraction, not half a byte: the error
// says what to write instead. Half a byte with a unit gets the usual example.
TEST(PlannerBudget, AFractionWithoutAUnitSuggestsThePercentage) {
  try {
    parseBudget("0.5", kPeak);
    FAIL() << "0.5 was accepted";
  } catch (const BudgetError& e) {
    EXPECT_NE(std::string(e.what()).find("--budget 50%"), std::string::npos) << e.what();
  }
  try {
    parseBudget("0.5B", kPeak);
    FAIL() << "0.5B was accepted";
  } catch (const BudgetError& e) {
    EXPECT_EQ(std::string(e.what()).find("--budget 50%"), std::string::npos) << e.what();
  }
}

// They are usage errors (exit 2), as every mistake in the command line is.
TEST(PlannerBudget, GarbageZeroAndNegativeAreOneLineUsageErrorsWithAnExample) {
  for (const char* text : {"", "   ", "GB", "six GB", "6XB", "6 GBs", "0", "0GB", "-1GB", "-5%", "0%", "0.1B",
                           "nan", "inf", "6G B"}) {
    try {
      parseBudget(text, kPeak);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const BudgetError& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::Usage) << "a budget is a command-line argument: " << message;
      EXPECT_NE(message.find("6GB"), std::string::npos) << message;
      EXPECT_NE(message.find("60%"), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

// Note: [a bare budget below the step's start] (budget.h). Below the bytes
// the step starts with (here 1000), a bare number is refused as a usage error
// that names the percentage it likely meant; at or above them, or with a unit
// or percent sign (a space between or not), it stands.
TEST(PlannerBudget, ABareNumberBelowWhatTheStepStartsWithAsksForThePercentage) {
  constexpr int64_t kBeforeStep = 1000;
  try {
    checkBareBudget("60", kBeforeStep);
    FAIL() << "a bare 60 below 1000 bytes before the step was accepted";
  } catch (const BudgetError& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(message.find("did you mean 60%?"), std::string::npos) << message;
    EXPECT_NE(message.find("1000 B"), std::string::npos) << "names what the step starts with: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_LT(message.size(), 200u) << message;
  }
  EXPECT_THROW(checkBareBudget("999", kBeforeStep), BudgetError);
  EXPECT_NO_THROW(checkBareBudget("1000", kBeforeStep));
  EXPECT_NO_THROW(checkBareBudget("60B", kBeforeStep));
  EXPECT_NO_THROW(checkBareBudget("1B", kBeforeStep));
  for (const char* text : {"60%", "60 %", "60 b", "6GB", "512MiB", "64K"})
    EXPECT_NO_THROW(checkBareBudget(text, kBeforeStep)) << text;
  EXPECT_THROW(checkBareBudget(" 60 ", kBeforeStep), BudgetError);
  // A profile that holds nothing before its step leaves every bare number bytes.
  EXPECT_NO_THROW(checkBareBudget("1", 0));
}

// What `--budget 60 %` leaves behind as a second word is a unit; a profile's
// name or a number is not.
TEST(PlannerBudget, AUnitAloneIsRecognisedAsOne) {
  for (const char* word : {"%", "B", "b", "GB", "gib", "MiB", "K", "TB"}) EXPECT_TRUE(isBudgetUnit(word)) << word;
  for (const char* word : {"", "60", "60%", "profile.json", "GBs", "x", "%%"}) EXPECT_FALSE(isBudgetUnit(word)) << word;
}

}  // namespace
}  // namespace acprof
