// Which std::filesystem::remove_all does this executable call? It is linked
// against fs_shadow.cpp's library, which exports a fake one the way pip's
// LibTorch exports its static copy (Note [libstdc++ before LibTorch]).
// Prints "bound to libstdc++" when the real function removed a directory
// holding one file (count 2), "bound to the shadow" when the fake answered.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

extern "C" int bnn_fs_shadow_loaded();

int main() {
  if (bnn_fs_shadow_loaded() != 1) return 1;
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("bnn_link_order_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  { std::ofstream(dir / "file.txt") << "x"; }
  const std::uintmax_t removed = fs::remove_all(dir);
  const bool gone = !fs::exists(dir);
  if (removed == 424242) {
    std::printf("bound to the shadow (remove_all returned %ju, directory %s)\n", removed,
                gone ? "gone" : "still there");
    std::error_code ec;
    fs::remove(dir / "file.txt", ec);
    fs::remove(dir, ec);
    return 0;
  }
  if (removed == 2 && gone) {
    std::printf("bound to libstdc++ (removed %ju entries)\n", removed);
    return 0;
  }
  std::printf("unexpected: remove_all returned %ju, directory %s\n", removed,
              gone ? "gone" : "still there");
  return 1;
}
