import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running `strata-push-crash-helper` with its standard output on a pipe, read without blocking.
///
/// Spawned with `posix_spawn` (the pipe's ends close-on-exec, so that children of other tests do
/// not inherit them); killed with SIGKILL by ``killAndWait()`` or when released. One test drives
/// one child.
final class PushCrashHelperProcess {
    let pid: pid_t
    private let stdoutFD: Int32
    private var output: [UInt8] = []
    private var exitStatus: Int32?

    /// The `strata-push-crash-helper` built next to the test bundle: `$STRATA_PUSH_CRASH_HELPER`, or
    /// the directory of the running executable (`/proc/self/exe`), of `CommandLine.arguments[0]` or
    /// of `Bundle.main`, or `.build/debug` and `.build/*/debug` under the package root.
    static func executable() throws -> String {
        let name = "strata-push-crash-helper"
        let fm = FileManager.default
        var candidates: [String] = []
        if let env = ProcessInfo.processInfo.environment["STRATA_PUSH_CRASH_HELPER"] { candidates.append(env) }
        var dirs: [URL] = []
        if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            dirs.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        let arg0 = URL(fileURLWithPath: CommandLine.arguments[0],
                       relativeTo: URL(fileURLWithPath: fm.currentDirectoryPath, isDirectory: true))
        dirs.append(arg0.standardizedFileURL.deletingLastPathComponent())
        dirs.append(Bundle.main.bundleURL.deletingLastPathComponent())
        dirs.append(Bundle.main.bundleURL)
        // A macOS bundle: <dir>/X.xctest/Contents/MacOS/X.
        dirs.append(Bundle.main.bundleURL.deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent())
        candidates += dirs.map { $0.appendingPathComponent(name).path }
        // The package root: this file is Tests/StrataPushDeliveryTests/PushCrashHelperProcess.swift.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let build = root.appendingPathComponent(".build")
        candidates.append(build.appendingPathComponent("debug/" + name).path)
        for sub in (try? fm.contentsOfDirectory(atPath: build.path))?.sorted() ?? [] {
            candidates.append(build.appendingPathComponent(sub + "/debug/" + name).path)
        }
        for candidate in candidates where fm.isExecutableFile(atPath: candidate) { return candidate }
        throw HelperError("no \(name) executable found; looked at \(candidates)")
    }

    /// Starts the helper with `arguments`; its standard error goes to ours.
    init(_ arguments: [String]) throws {
        let path = try Self.executable()
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw HelperError("pipe: errno \(errno)") }
        for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, nil, argv, environ)
        close(pipeFDs[1])
        guard rc == 0 else {
            close(pipeFDs[0])
            throw HelperError("posix_spawn \(path): error \(rc)")
        }
        pid = child
        stdoutFD = pipeFDs[0]
        _ = fcntl(stdoutFD, F_SETFL, fcntl(stdoutFD, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            _ = reap()
        }
        close(stdoutFD)
    }

    /// Reads what is available now; false once the output reached its end.
    @discardableResult
    private func drain() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(stdoutFD, $0.baseAddress!, $0.count) }
            if n > 0 { output.append(contentsOf: chunk[0..<n]); continue }
            if n == 0 { return false }
            if errno == EINTR { continue }
            return true
        }
    }

    /// The complete lines written so far.
    var lines: [String] {
        drain()
        guard let end = output.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
        return String(decoding: output[..<end], as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Polls (without blocking a thread) until a line satisfies `predicate`; false after `timeout`
    /// or when the helper's output ends first.
    func waitForLine(timeout: Duration = .seconds(30), _ predicate: (String) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let open = drain()
            if lines.contains(where: predicate) { return true }
            if !open { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// Sends SIGKILL and reaps the helper.
    func killAndWait() {
        if exitStatus == nil { kill(pid, SIGKILL) }
        _ = reap()
        drain()
    }

    private func reap() -> Int32 {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { status = -1; break }
        }
        exitStatus = status
        return status
    }
}

struct HelperError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
