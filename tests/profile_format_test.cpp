#include "acprof/profile_format.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include <functional>

namespace acprof {
namespace {

// A two-step profile by hand: one weight (static, 100 B), an activation made in
// step 0 and freed in step 1, and a temporary made and freed inside step 0.
Profile handMadeProfile() {
  Profile p;
  p.meta.model_sha256 = "abc";
  p.event_count = 4;
  ForwardNode relu;
  relu.id = 0;
  relu.kind = "aten::relu";
  relu.scope = "layer";
  relu.inputs = {"x"};
  relu.outputs = {"y"};
  relu.reads = {0};
  relu.forward_step = 0;
  relu.forward_time_us = 1.5;
  relu.backward_steps = {1};
  relu.backward_time_us = 2.0;
  p.nodes.push_back(relu);
  auto value = [](int id, const std::string& name, int producer) {
    GraphValue v;
    v.id = id;
    v.name = name;
    v.producer_node = producer;
    v.type = "Tensor";
    v.is_tensor = v.can_leave = true;
    v.bytes = 40;
    return v;
  };
  p.values = {value(0, "x", -1), value(1, "y", 0)};
  p.graph_outputs = {1};
  Step forward;
  forward.index = 0;
  forward.phase = Phase::Forward;
  forward.node = 0;
  forward.first_event = 0;
  Step backward;
  backward.index = 1;
  backward.phase = Phase::Backward;
  backward.first_event = 3;
  p.steps = {forward, backward};
  auto tensor = [](int id, int64_t bytes, Category c, int alloc, int free) {
    TensorRecord t;
    t.id = id;
    t.bytes = bytes;
    t.category = c;
    t.alloc_event = alloc;
    t.free_event = free;
    return t;
  };
  p.tensors = {tensor(0, 100, Category::Weight, -1, 4), tensor(1, 40, Category::Activation, 0, 3),
               tensor(2, 7, Category::Temporary, 1, 2)};
  timelineFromTensors(p);
  return p;
}

TEST(ProfileFormat, TimelineReplaysIntervalsExactly) {
  const Profile p = handMadeProfile();
  // Peak: weight + activation + temporary = 147 at event 1, in step 0.
  EXPECT_EQ(p.summary.peak_bytes, 147);
  EXPECT_EQ(p.summary.peak_step, 0);
  EXPECT_EQ(p.steps[0].peak_bytes, 147);
  EXPECT_EQ(p.steps[0].bytes_at_end[static_cast<int>(Category::Activation)], 40);
  EXPECT_EQ(p.steps[0].bytes_at_end[static_cast<int>(Category::Temporary)], 0);
  EXPECT_EQ(p.steps[1].bytes_at_end[static_cast<int>(Category::Activation)], 0);
  EXPECT_EQ(p.steps[1].bytes_at_end[static_cast<int>(Category::Weight)], 100);
  const std::vector<int64_t> live = liveBytesPerEvent(p);
  EXPECT_EQ(live, (std::vector<int64_t>{140, 147, 140, 100}));
}

TEST(ProfileFormat, JsonRoundTripKeepsEveryField) {
  const Profile p = handMadeProfile();
  const Profile back = profileFromJson(profileToJson(p), "test");
  EXPECT_EQ(profileToJson(back), profileToJson(p));
  EXPECT_EQ(back.nodes[0].backward_steps, std::vector<int>{1});
  EXPECT_EQ(back.tensors[2].category, Category::Temporary);
  EXPECT_EQ(back.nodes[0].reads, std::vector<int>{0});
  EXPECT_EQ(back.values[1].name, "y");
  EXPECT_EQ(back.graph_outputs, std::vector<int>{1});
}

TEST(ProfileFormat, RejectsOtherSchemaVersionWithTheFix) {
  std::string json = profileToJson(handMadeProfile());
  const std::string key = "\"schema_version\": " + std::to_string(kProfileSchemaVersion);
  json.replace(json.find(key), key.size(), "\"schema_version\": 99");
  try {
    profileFromJson(json, "old.json");
    FAIL() << "accepted schema 99";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("re-run 'acprof profile'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("upgrade acprof"), std::string::npos) << "99 is newer: " << e.what();
  }
}

TEST(ProfileFormat, RejectsDamagedJsonAndDanglingIndices) {
  EXPECT_THROW(profileFromJson("{\"format\": \"acprof-profile\", ", "cut.json"), FormatError);
  std::string json = profileToJson(handMadeProfile());
  const std::string key = "\"alloc_event\": -1";
  json.replace(json.find(key), key.size(), "\"alloc_event\": 12");
  EXPECT_THROW(profileFromJson(json, "dangling.json"), FormatError);
  std::string reads = profileToJson(handMadeProfile());
  const std::string read_key = "\"reads\": [";
  ASSERT_NE(reads.find(read_key), std::string::npos) << reads;
  const size_t first_read = reads.find('0', reads.find(read_key));
  reads.replace(first_read, 1, "7");
  EXPECT_THROW(profileFromJson(reads, "dangling_read.json"), FormatError);
}

// What fuzz/profile_json_fuzzer.cpp found the reader letting through, each a
// one-line FormatError now: a number no double holds (nlohmann's out_of_range
// escaped as an internal error), numbers that do not fit their field (cast
// with undefined behaviour, or silently truncated), a tensor's step past the
// last step (the planner indexes steps by it), and byte counts whose sums
// would overflow int64.
TEST(ProfileFormat, RejectsNumbersThatDoNotFitAndStepsPastTheLast) {
  const std::string good = profileToJson(handMadeProfile());
  struct Edit {
    std::string from, to, words;
  };
  const std::vector<Edit> edits = {
      {"\"event_count\": 4", "\"event_count\": 1e400", "not valid JSON (a number out of range)"},
      {"\"event_count\": 4", "\"event_count\": 1e300", "field 'event_count' has the wrong type or is out of range"},
      {"\"event_count\": 4", "\"event_count\": 4.5", "field 'event_count' has the wrong type"},
      {"\"event_count\": 4", "\"event_count\": 4294967300", "field 'event_count' has the wrong type"},
      {"\"alloc_step\": -1", "\"alloc_step\": 2", "tensor 0 has allocation step 2"},
      {"\"bytes\": 100", "\"bytes\": 9000000000000000000", "tensor 0 has 9000000000000000000 bytes"},
      {"\"event_count\": 4", "\"event_count\": 7", "7 events for 3 tensors"},
  };
  for (const Edit& edit : edits) {
    std::string json = good;
    ASSERT_NE(json.find(edit.from), std::string::npos) << edit.from;
    json.replace(json.find(edit.from), edit.from.size(), edit.to);
    try {
      profileFromJson(json, "edited.json");
      ADD_FAILURE() << "accepted " << edit.to;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(edit.words), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

// Every step index the planner and the CLI look up without checking: each
// pointing one past the last step (the hand-made profile has two) is refused,
// naming the field, while -1 (none) stays valid where the format allows it.
TEST(ProfileFormat, RejectsStepIndicesPastTheLastStep) {
  struct Damage {
    std::function<void(Profile&)> apply;
    std::string words;
  };
  const std::vector<Damage> damages = {
      {[](Profile& p) { p.tensors[1].free_step = 2; }, "tensor 1 has free step 2"},
      {[](Profile& p) { p.tensors[1].alloc_step = 2; }, "tensor 1 has allocation step 2"},
      {[](Profile& p) { p.tensors[1].last_forward_use_step = 2; }, "tensor 1 has last forward use at step 2"},
      {[](Profile& p) { p.tensors[1].first_backward_use_step = 2; }, "tensor 1 has first backward use at step 2"},
      {[](Profile& p) { p.tensors[2].free_step = -2; }, "tensor 2 has free step -2"},
      {[](Profile& p) { p.summary.peak_step = 2; }, "the summary has peak step 2"},
  };
  ASSERT_EQ(handMadeProfile().steps.size(), 2u);
  EXPECT_NO_THROW(profileFromJson(profileToJson(handMadeProfile()), "good.json"));
  for (const Damage& damage : damages) {
    Profile p = handMadeProfile();
    damage.apply(p);
    try {
      profileFromJson(profileToJson(p), "edited.json");
      ADD_FAILURE() << "accepted a profile with " << damage.words;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(damage.words), std::string::npos) << e.what();
    }
  }
}

TEST(ProfileFormat, AtomicWriteLeavesNoFileWhenDirectoryIsMissing) {
  const std::string path = "/nonexistent-dir-acprof/profile.json";
  EXPECT_THROW(writeProfileFile(handMadeProfile(), path), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A pipe given as the output is written through, not replaced by a regular file.
TEST(ProfileFormat, WritesThroughAPipeInsteadOfReplacingIt) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "acprof_format_fifo";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "out.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo);
    received.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  writeProfileFile(handMadeProfile(), fifo);
  reader.join();
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_EQ(received, profileToJson(handMadeProfile()));
  std::filesystem::remove_all(dir);
}

// A device that fails every write (a node of /dev/full's kind, made in a
// temporary directory) is an error, not "wrote", and stays a device.
TEST(ProfileFormat, AFailedWriteThroughIsAnErrorAndTheDeviceStays) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "acprof_format_full";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string full = (dir / "full").string();
  if (::mknod(full.c_str(), S_IFCHR | 0600, makedev(1, 7)) != 0)
    GTEST_SKIP() << "cannot make a device node here (needs root): " << std::strerror(errno);
  EXPECT_THROW(writeProfileFile(handMadeProfile(), full), Error);
  EXPECT_TRUE(std::filesystem::is_character_file(full));
  std::filesystem::remove_all(dir);
}

TEST(ProfileFormat, FormatBytesUsesBinaryUnits) {
  EXPECT_EQ(formatBytes(12), "12 B");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatBytes(int64_t{3} << 30), "3.00 GiB");
}

}  // namespace
}  // namespace acprof
