// sha256OfFile: the hash that ties a plan to its model file. Expected values
// are the published SHA-256 test vectors (FIPS 180-2, appendix B; NIST's
// "one million a"), which `sha256sum` prints too, so the hashes in profiles
// written before and after any change of implementation stay the same.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "acprof/recorder.h"
#include "test_support.h"

namespace acprof {
namespace {

std::string hashOf(const std::string& bytes, const std::string& name) {
  const std::string path = testing::makeScratchDir("sha256") + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return sha256OfFile(path);
}

TEST(Sha256OfFile, MatchesThePublishedTestVectors) {
  EXPECT_EQ(hashOf("", "empty"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hashOf("abc", "abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding's length field no longer fits the first block.
  EXPECT_EQ(hashOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "two-blocks"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// A million bytes: more than one of the function's 64 KiB reads, and not a
// multiple of them.
TEST(Sha256OfFile, HashesAFileLargerThanOneRead) {
  EXPECT_EQ(hashOf(std::string(1000000, 'a'), "million-a"),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256OfFile, AMissingFileIsARecordErrorNamingIt) {
  const std::string path = testing::makeScratchDir("sha256") + "/no-such-model.pt";
  try {
    sha256OfFile(path);
    FAIL() << "no error for a missing file";
  } catch (const RecordError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace acprof
