// SHA-256 of a file, so that a plan is tied to the exact model bytes it was
// made for: the rewrite refuses a plan whose hash is not the model's, so the
// hash must be collision-resistant. OpenSSL's libcrypto computes it (Debian's
// libssl-dev), the reference implementation maintained for security, rather
// than a hand-written FIPS 180-4 here.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "acprof/recorder.h"

namespace acprof {
namespace {

struct FreeDigestContext {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

// libcrypto fails here only when it cannot allocate or its default provider
// is missing, which no input of ours causes.
void checkDigestStep(int ok, const std::string& path, const char* step) {
  if (ok != 1) throw RecordError(fmt::format("{}: libcrypto's SHA-256 failed at {}", path, step));
}

}  // namespace

std::string sha256OfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RecordError(fmt::format("{}: cannot open the file; check the path", path));
  const std::unique_ptr<EVP_MD_CTX, FreeDigestContext> context(EVP_MD_CTX_new());
  checkDigestStep(context != nullptr, path, "EVP_MD_CTX_new");
  checkDigestStep(EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr), path, "EVP_DigestInit_ex");
  // Streamed in 64 KiB reads: a model file can be gigabytes.
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const size_t got = static_cast<size_t>(in.gcount());
    if (got > 0) checkDigestStep(EVP_DigestUpdate(context.get(), buffer.data(), got), path, "EVP_DigestUpdate");
  }
  if (in.bad()) throw RecordError(fmt::format("{}: reading the file failed; check the file", path));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  checkDigestStep(EVP_DigestFinal_ex(context.get(), digest, &digest_size), path, "EVP_DigestFinal_ex");
  std::string hex;
  hex.reserve(2 * digest_size);
  for (unsigned int i = 0; i < digest_size; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace acprof
