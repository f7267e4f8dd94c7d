#include "tools/distributed_rows.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "models/units.h"
#include "tools/command_registry.h"
#include "tools/layout_report.h"

namespace clustersim::tools {
namespace {

using Clock = std::chrono::steady_clock;

// Message tags. Worker -> rank 0: kHello once ("<threads> <pid> <host>"), kResult per row
// ("<row> <result>"); rank 0 -> worker: kAssign ("<row>"), kStop, kQuit ("<exit code>": the run
// failed, end now); both ways: kBeat, once a second.
enum Tag : int { kHello = 1, kAssign = 2, kResult = 3, kStop = 4, kBeat = 5, kQuit = 6 };

constexpr auto kBeatEvery = std::chrono::seconds(1);
constexpr auto kIdleWait = std::chrono::milliseconds(2);

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// A row running in a forked child (RowStudy::isolate), which writes its result to a pipe.
struct Child {
  std::size_t row = 0;
  pid_t pid = -1;
  int fd = -1;  // the pipe's read end, non-blocking
  std::string out;
  Clock::time_point started;
};

// Forks a child that runs `row` and writes its result to a pipe. Called by the one thread that
// forks (LocalRows' owner): a child forked while another thread of this process is inside
// malloc inherits that thread's allocator lock held and deadlocks on its first allocation
// (glibc's malloc guards against it; GCC 12's AddressSanitizer allocator does not: seen as a row
// that never ended under the sanitizer build), so isolated rows start no threads of their own.
Child start_child(const RowStudy& study, std::size_t row) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the rank, never outlives it
    int code = 0;
    try {
      const std::string out = study.evaluate(row);
      for (std::size_t done = 0; done < out.size();) {
        const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
        if (n <= 0 && errno != EINTR) break;
        if (n > 0) done += static_cast<std::size_t>(n);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      code = 3;
    }
    std::fflush(stderr);
    ::_exit(code);
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return {row, pid, fds[0], {}, Clock::now()};
}

// Reads what `child` has written so far; true once it has ended (its pipe closed and the process
// reaped). Throws where the child did not end well (a crash, the kernel's OOM killer).
bool poll_child(Child& child) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(child.fd, buf, sizeof buf);
    if (n > 0) {
      child.out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    break;  // end of file (or an error: the child is reaped below either way)
  }
  ::close(child.fd);
  child.fd = -1;
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    throw std::runtime_error("its process (pid " + std::to_string(child.pid) +
                             ") was killed by signal " + std::to_string(WTERMSIG(status)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("its process (pid " + std::to_string(child.pid) + ") exited " +
                             std::to_string(WEXITSTATUS(status)));
  }
  return true;
}

// Rows run here, where the caller (one thread: the main one) hands them in and collects them.
// Rows in-process run on `threads` threads of their own, which take rows from a queue and leave
// results in another; isolated rows run in forked children that the caller's thread starts and
// reads (no threads: see start_child). An exception in a row is a bug: kept, and reported by the
// caller as an internal error.
class LocalRows {
 public:
  LocalRows(const RowStudy& study, int threads) : study_(study) {
    if (study.isolate) return;
    for (int t = 0; t < threads; ++t) pool_.emplace_back([this] { work(); });
  }
  ~LocalRows() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    wake_.notify_all();
    for (auto& t : pool_) t.join();
    for (Child& c : children_) {
      ::kill(c.pid, SIGKILL);
      if (c.fd >= 0) ::close(c.fd);
      ::waitpid(c.pid, nullptr, 0);
    }
  }
  void add(std::size_t row) {
    if (study_.isolate) {
      try {
        children_.push_back(start_child(study_, row));
      } catch (const std::exception& e) {
        keep_error(row, e.what());
      }
      return;
    }
    {
      std::lock_guard lock(mutex_);
      queued_.push_back(row);
    }
    wake_.notify_one();
  }
  // Results so far (row, result), and the first internal error ("" none).
  std::vector<std::pair<std::size_t, std::string>> take_results(std::string* error) {
    for (auto c = children_.begin(); c != children_.end();) {
      try {
        if (!poll_child(*c)) {
          ++c;
          continue;
        }
        std::lock_guard lock(mutex_);
        results_.emplace_back(c->row, std::move(c->out));
      } catch (const std::exception& e) {
        keep_error(c->row, e.what());
      }
      c = children_.erase(c);
    }
    std::lock_guard lock(mutex_);
    *error = error_;
    return std::exchange(results_, {});
  }
  // Rows queued or running here, and when each running one started.
  std::map<std::size_t, Clock::time_point> running() {
    std::lock_guard lock(mutex_);
    auto out = running_;
    for (const Child& c : children_) out[c.row] = c.started;
    return out;
  }
  std::size_t busy() {
    std::lock_guard lock(mutex_);
    return queued_.size() + running_.size() + children_.size();
  }

 private:
  void keep_error(std::size_t row, const std::string& why) {
    std::lock_guard lock(mutex_);
    if (error_.empty()) error_ = study_.describe(row) + ": " + why;
  }

  void work() {
    for (;;) {
      std::size_t row = 0;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return closed_ || !queued_.empty(); });
        if (queued_.empty()) return;
        row = queued_.front();
        queued_.pop_front();
        running_[row] = Clock::now();
      }
      std::string result;
      std::string error;
      try {
        result = study_.evaluate(row);
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (!error.empty()) keep_error(row, error);
      std::lock_guard lock(mutex_);
      running_.erase(row);
      if (error.empty()) results_.emplace_back(row, std::move(result));
    }
  }

  const RowStudy& study_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::size_t> queued_;
  std::map<std::size_t, Clock::time_point> running_;
  std::vector<std::pair<std::size_t, std::string>> results_;
  std::string error_;
  bool closed_ = false;
  std::vector<std::thread> pool_;
  std::vector<Child> children_;  // isolated rows, touched by the owner's thread only
};

std::pair<std::size_t, std::string> split_row(const std::string& bytes) {
  const std::size_t space = bytes.find(' ');
  return {std::stoull(bytes.substr(0, space)),
          space == std::string::npos ? std::string() : bytes.substr(space + 1)};
}

// A worker rank: asks for `threads` rows, runs what it is given, sends each result back (which
// frees a thread for the next), until rank 0 says stop.
void run_worker(RankChannel& ranks, const RowStudy& study) {
  const int threads = std::max(1, study.threads);
  ranks.send(0, kHello,
             std::to_string(threads) + " " + std::to_string(::getpid()) + " " + host_name());
  LocalRows local(study, threads);
  bool stopping = false;
  auto heard = Clock::now();
  auto beat = Clock::now();
  for (;;) {
    bool active = false;
    while (auto m = ranks.poll()) {
      active = true;
      heard = Clock::now();
      if (m->tag == kAssign) local.add(std::stoull(m->bytes));
      if (m->tag == kStop) stopping = true;
      if (m->tag == kQuit) ranks.abort(std::stoi(m->bytes));
    }
    std::string error;
    for (auto& [row, result] : local.take_results(&error)) {
      active = true;
      ranks.send(0, kResult, std::to_string(row) + " " + result);
    }
    if (!error.empty()) {
      std::fprintf(stderr, "clustersim %s: rank %d: internal error: %s\n", study.command.c_str(),
                   ranks.rank(), error.c_str());
      ranks.abort(3);
    }
    if (stopping && local.busy() == 0) return;
    if (Clock::now() - beat >= kBeatEvery) {
      ranks.send(0, kBeat, "");
      beat = Clock::now();
    }
    if (seconds_since(heard) > kRankSilenceLimit_s) {
      std::fprintf(stderr, "clustersim %s: rank %d: rank 0 has sent nothing for %s; stopping\n",
                   study.command.c_str(), ranks.rank(),
                   models::format_time(seconds_since(heard)).c_str());
      ranks.abort(kExitRankLost);
    }
    if (!active) std::this_thread::sleep_for(kIdleWait);
  }
}

// What rank 0 knows of one rank.
struct Peer {
  int threads = 0;  // 0 until its hello
  long pid = 0;
  std::string host;
  std::map<std::size_t, Clock::time_point> rows;  // running there, since
  Clock::time_point heard = Clock::now();
  std::string name(int rank) const {
    if (threads == 0) return "rank " + std::to_string(rank);
    return "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + " on " + host + ")";
  }
};

class Coordinator {
 public:
  Coordinator(RankChannel& ranks, const RowStudy& study)
      : ranks_(ranks),
        study_(study),
        pending_(study.todo.begin(), study.todo.end()),
        peers_(static_cast<std::size_t>(ranks.size())),
        progress_(study.command),
        host_(host_name()) {
    peers_[0] = {std::max(1, study.threads), static_cast<long>(::getpid()), host_name(), {}, {}};
  }

  void run() {
    LocalRows local(study_, peers_[0].threads);
    for (int t = 0; t < peers_[0].threads; ++t) hand_out(0, &local);
    const auto start = Clock::now();
    auto beat = Clock::now();
    while (finished_ < study_.todo.size()) {
      bool active = false;
      while (auto m = ranks_.poll()) {
        active = true;
        receive(*m, &local);
      }
      std::string error;
      for (auto& [row, result] : local.take_results(&error)) {
        active = true;
        peers_[0].rows.erase(row);
        record(row, result);
        hand_out(0, &local);
      }
      if (!error.empty()) fail(3, "internal error: " + error);
      // Local rows' start times are when a thread took them, not when they were queued.
      for (const auto& [row, since] : local.running()) peers_[0].rows[row] = since;
      check_limits();
      if (Clock::now() - beat >= kBeatEvery) {
        for (int r = 1; r < ranks_.size(); ++r) ranks_.send(r, kBeat, "");
        beat = Clock::now();
        draw_progress(start);
      }
      if (!active) std::this_thread::sleep_for(kIdleWait);
    }
    progress_.done();
    for (int r = 1; r < ranks_.size(); ++r) ranks_.send(r, kStop, "");
  }

 private:
  // Gives rank r one more row, if any is left.
  void hand_out(int r, LocalRows* local) {
    if (pending_.empty()) return;
    const std::size_t row = pending_.front();
    pending_.pop_front();
    peers_[static_cast<std::size_t>(r)].rows[row] = Clock::now();
    if (r == 0) {
      local->add(row);
    } else {
      ranks_.send(r, kAssign, std::to_string(row));
    }
  }

  void receive(const RankChannel::Message& m, LocalRows* local) {
    Peer& peer = peers_[static_cast<std::size_t>(m.from)];
    peer.heard = Clock::now();
    if (m.tag == kHello) {
      char host[256] = {};
      std::sscanf(m.bytes.c_str(), "%d %ld %255s", &peer.threads, &peer.pid, host);
      peer.threads = std::max(1, peer.threads);
      peer.host = host;
      for (int t = 0; t < peer.threads; ++t) hand_out(m.from, local);
    } else if (m.tag == kResult) {
      auto [row, result] = split_row(m.bytes);
      if (peer.rows.erase(row) == 0) return;  // not this rank's row: ignored
      record(row, result);
      hand_out(m.from, local);
    }
  }

  void record(std::size_t row, const std::string& result) {
    ++finished_;
    if (auto st = study_.finished(row, result); !st) fail(kExitBadInput, st.message());
  }

  // Rows past --row-timeout; ranks gone or silent.
  void check_limits() {
    for (std::size_t r = 0; r < peers_.size(); ++r) {
      const Peer& peer = peers_[r];
      const std::string name = peer.name(static_cast<int>(r));
      if (study_.row_timeout_s > 0) {
        for (const auto& [row, since] : peer.rows) {
          if (seconds_since(since) > study_.row_timeout_s) {
            fail(kExitRowTimeout, study_.describe(row) + " ran past --row-timeout " +
                                      models::format_time(study_.row_timeout_s) + " on " + name);
          }
        }
      }
      if (r == 0) continue;
      // A rank on this host whose process is gone is lost now; elsewhere, once silent too long.
      const bool gone = peer.threads > 0 && peer.host == host_ &&
                        ::kill(static_cast<pid_t>(peer.pid), 0) != 0 && errno == ESRCH;
      if (gone || seconds_since(peer.heard) > kRankSilenceLimit_s) {
        lost_ = static_cast<int>(r);
        fail(kExitRankLost, name + (gone ? " died" : " has sent nothing for " +
                                                         models::format_time(seconds_since(peer.heard))) +
                                " (" + rows_of(peer) + ")");
      }
    }
  }

  std::string rows_of(const Peer& peer) const {
    if (peer.rows.empty()) return "no row in flight";
    std::string out = "in flight there: ";
    for (const auto& [row, since] : peer.rows) {
      out += (out.back() == ' ' ? "" : ", ") + study_.describe(row);
    }
    return out;
  }

  void draw_progress(Clock::time_point start) {
    const std::size_t done = study_.rows - study_.todo.size() + finished_;
    std::string unit = "rows";
    if (finished_ > 0) {
      const double left_s = seconds_since(start) / static_cast<double>(finished_) *
                            static_cast<double>(study_.todo.size() - finished_);
      unit += " on " + std::to_string(ranks_.size()) + " rank" + (ranks_.size() > 1 ? "s" : "") +
              ", about " + models::format_time(left_s) + " left";
    }
    progress_.update(done, study_.rows, unit.c_str());
  }

  [[noreturn]] void fail(int exit_code, const std::string& why) {
    progress_.done();
    const std::size_t done = study_.rows - study_.todo.size() + finished_;
    std::string message = "clustersim " + study_.command + ": " + why;
    if (!study_.journal.empty()) {
      message += "; " + std::to_string(done) + " of " + std::to_string(study_.rows) +
                 " rows are in " + study_.journal + ": rerun with --resume for the rest";
    }
    std::fprintf(stderr, "%s\n", message.c_str());
    // The others end too (a send to a lost rank could fail the sender: it gets none).
    for (int r = 1; r < ranks_.size(); ++r) {
      if (r != lost_) ranks_.send(r, kQuit, std::to_string(exit_code));
    }
    ranks_.abort(exit_code);
    std::_Exit(exit_code);  // (abort() does not return; the compiler cannot see through virtual)
  }

  RankChannel& ranks_;
  const RowStudy& study_;
  std::deque<std::size_t> pending_;
  std::vector<Peer> peers_;
  std::size_t finished_ = 0;
  ProgressLine progress_;
  std::string host_;
  int lost_ = -1;  // the rank found dead or silent
};

}  // namespace

models::Result<double> parse_row_timeout(const std::string& text) {
  if (text.empty()) return 0.0;
  auto t = models::parse_time_s(text);
  if (!t) return models::Error{"--row-timeout " + text + ": " + t.message()};
  if (*t <= 0) return models::Error{"--row-timeout " + text + ": must be more than 0"};
  return *t;
}

void run_rows(RankChannel& ranks, const RowStudy& study) {
  if (ranks.rank() != 0) {
    run_worker(ranks, study);
    return;
  }
  Coordinator(ranks, study).run();
}

void release_ranks(RankChannel& ranks) {
  if (ranks.rank() != 0) return;
  for (int r = 1; r < ranks.size(); ++r) ranks.send(r, kStop, "");
}

}  // namespace clustersim::tools
