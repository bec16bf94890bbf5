// The fake kubelet as a process, for shell tests of the agent binary: serves
// the pods of a file on a unix socket until killed.
//   gpulens_fake_kubelet SOCKET PODS_FILE
// PODS_FILE: one container per line, "namespace pod container resource
// device[,device...]"; lines starting with '#' are skipped. It prints
// "ready" once the socket listens.
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "sources/kubelet/testing/fake_kubelet.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: gpulens_fake_kubelet SOCKET PODS_FILE\n";
    return 2;
  }
  std::ifstream in(argv[2]);
  if (!in) {
    std::cerr << "cannot read " << argv[2] << "\n";
    return 1;
  }
  std::vector<gpulens::testing::FakePod> pods;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string ns, pod, container, resource, devices;
    if (!(fields >> ns >> pod >> container >> resource >> devices)) {
      std::cerr << "bad line: " << line << "\n";
      return 1;
    }
    gpulens::testing::FakeDevices d{resource, {}};
    std::istringstream ids(devices);
    for (std::string id; std::getline(ids, id, ',');) d.ids.push_back(id);
    pods.push_back({pod, ns, {{container, {d}}}});
  }
  gpulens::testing::FakeKubelet kubelet(argv[1]);
  if (!kubelet.running()) {
    std::cerr << "cannot listen on " << argv[1] << "\n";
    return 1;
  }
  kubelet.set_pods(std::move(pods));
  std::cout << "ready" << std::endl;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  int sig = 0;
  sigwait(&set, &sig);
  return 0;
}
