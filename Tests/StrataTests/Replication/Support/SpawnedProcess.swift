import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, its standard output and error appended to a file,
/// reaped with `waitpid` by its own pid.
///
/// Not Foundation's `Process`: on Linux (swift-corelibs-foundation, Swift 6.3.1) a `Process` run
/// from a test left its exited child a zombie, `isRunning` stayed true and `waitUntilExit()` never
/// returned (seen with `Scripts/postgres start`, whose pg_ctl leaves a daemon behind).
final class SpawnedProcess: @unchecked Sendable {
    let pid: pid_t
    private let lock = NSLock()
    private var status: Int32?

    /// Starts `executable` (a path) with `arguments`; standard input is /dev/null, standard output
    /// and error are appended to `outputPath` (created when missing).
    init(_ executable: String, _ arguments: [String], outputPath: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, nil, argv, environ)
        guard rc == 0 else { throw FixtureError("posix_spawn \(executable): error \(rc)") }
        pid = child
    }

    deinit {
        if isRunning {
            _ = kill(pid, SIGKILL)
            _ = waitForExit(timeout: 10)
        }
    }

    /// Reaps the child if it has exited; returns its raw wait status then.
    private func poll(blocking: Bool) -> Int32? {
        lock.withLock {
            if let status { return status }
            var raw: Int32 = 0
            while true {
                let r = waitpid(pid, &raw, blocking ? 0 : WNOHANG)
                if r == pid {
                    status = raw
                    return raw
                }
                if r < 0 && errno == EINTR { continue }
                if r < 0 {
                    status = -1  // not our child any more (reaped elsewhere): gone
                    return -1
                }
                return nil
            }
        }
    }

    /// Whether the child still runs.
    var isRunning: Bool { poll(blocking: false) == nil }

    /// The exit code (or 128 + signal number), once exited.
    var exitCode: Int32? {
        guard let raw = poll(blocking: false) else { return nil }
        if raw == -1 { return -1 }
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }

    /// Sends `signal` if it still runs.
    func send(_ signal: Int32) {
        if isRunning { _ = kill(pid, signal) }
    }

    /// Waits at most `timeout` seconds for the child to exit; returns whether it did.
    func waitForExit(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    /// SIGKILL and reap.
    func killAndWait() {
        send(SIGKILL)
        _ = poll(blocking: true)
    }
}
