#include "acprof/command_budget.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace acprof {

double processAgeSeconds() {
  // Field 22 of /proc/self/stat is the start in clock ticks after boot; the
  // command name (field 2) may hold spaces, so fields count from its ')'.
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t name_end = text.rfind(')');
  std::ifstream uptime_file("/proc/uptime");
  double uptime_s = 0;
  if (name_end == std::string::npos || !(uptime_file >> uptime_s)) return 0;
  std::istringstream fields(text.substr(name_end + 1));
  std::string field;
  // After ')' come field 3 (state) onwards: field 22 is the 20th of them.
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field)) return 0;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (ticks_per_second <= 0) return 0;
  const double started_s = std::stod(field) / static_cast<double>(ticks_per_second);
  return uptime_s > started_s ? uptime_s - started_s : 0;
}

}  // namespace acprof
