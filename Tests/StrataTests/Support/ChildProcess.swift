import Foundation
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running `strata-crash-helper` child process with its standard output and error on pipes.
///
/// Spawned with `posix_spawn`; the pipes are made close-on-exec so that children other tests
/// spawn at the same time do not inherit them. Output is read without blocking (`poll`), and after
/// the child is killed and reaped whatever it wrote is still in the pipes, so ``drain()`` collects
/// it whole. Not thread-safe: one test drives one child.
final class CrashHelperProcess {
    let pid: pid_t
    private let stdoutFD: Int32
    private let stderrFD: Int32
    private(set) var output: [UInt8] = []
    private(set) var errorOutput: [UInt8] = []
    private(set) var exitStatus: Int32?

    /// The `strata-crash-helper` binary built next to the test bundle.
    ///
    /// Looked for, in order: `$STRATA_CRASH_HELPER`; the directory of the running executable
    /// (`/proc/self/exe`), of `CommandLine.arguments[0]` and of `Bundle.main`; then
    /// `.build*/debug` and `.build*/*/debug` under the package root.
    static func executable() throws -> String {
        let name = "strata-crash-helper"
        let fm = FileManager.default
        var candidates: [String] = []
        if let env = ProcessInfo.processInfo.environment["STRATA_CRASH_HELPER"] { candidates.append(env) }
        var dirs: [URL] = []
        if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            dirs.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        let arg0 = URL(fileURLWithPath: CommandLine.arguments[0],
                       relativeTo: URL(fileURLWithPath: fm.currentDirectoryPath, isDirectory: true))
        dirs.append(arg0.standardizedFileURL.deletingLastPathComponent())
        dirs.append(Bundle.main.bundleURL.deletingLastPathComponent())
        dirs.append(Bundle.main.bundleURL)
        // A macOS-style bundle: <dir>/X.xctest/Contents/MacOS/X.
        dirs.append(Bundle.main.bundleURL.deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent())
        candidates += dirs.map { $0.appendingPathComponent(name).path }
        // The package root: this file is Tests/StrataTests/Support/ChildProcess.swift.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        if let entries = try? fm.contentsOfDirectory(atPath: root.path) {
            for entry in entries.sorted() where entry.hasPrefix(".build") {
                let build = root.appendingPathComponent(entry)
                candidates.append(build.appendingPathComponent("debug/" + name).path)
                for sub in (try? fm.contentsOfDirectory(atPath: build.path))?.sorted() ?? [] {
                    candidates.append(build.appendingPathComponent(sub + "/debug/" + name).path)
                }
            }
        }
        for c in candidates where fm.isExecutableFile(atPath: c) { return c }
        throw CrashHelperError("no \(name) executable found; looked at \(candidates)")
    }

    /// Starts `strata-crash-helper` with `arguments`.
    init(_ arguments: [String]) throws {
        let path = try Self.executable()
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        // pipe2(O_CLOEXEC) is not exported to Swift; a child spawned by another thread between
        // pipe() and fcntl() could inherit an end, which only delays EOF, never relied on here.
        guard pipe(&outPipe) == 0 else { throw CrashHelperError("pipe: errno \(errno)") }
        guard pipe(&errPipe) == 0 else {
            close(outPipe[0]); close(outPipe[1])
            throw CrashHelperError("pipe: errno \(errno)")
        }
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 onto 1 and 2 clears close-on-exec on the copies the child keeps.
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, nil, argv, environ)
        close(outPipe[1])
        close(errPipe[1])
        guard rc == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw CrashHelperError("posix_spawn \(path): error \(rc)")
        }
        pid = child
        stdoutFD = outPipe[0]
        stderrFD = errPipe[0]
        for fd in [stdoutFD, stderrFD] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            _ = reap()
        }
        close(stdoutFD)
        close(stderrFD)
    }

    /// Reads whatever is available now from both pipes without blocking.
    /// Returns false once standard output reached its end.
    @discardableResult
    func drain() -> Bool {
        _ = readAvailable(stderrFD, into: &errorOutput)
        return readAvailable(stdoutFD, into: &output)
    }

    private func readAvailable(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n > 0 { buffer.append(contentsOf: chunk[0..<n]); continue }
            if n == 0 { return false }
            if errno == EINTR { continue }
            return true  // EAGAIN: nothing more for now
        }
    }

    /// The complete lines of standard output so far (a partial last line is left out).
    var lines: [String] {
        guard let end = output.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
        return String(decoding: output[..<end], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    var errorText: String { String(decoding: errorOutput, as: UTF8.self) }

    /// Reads output until `predicate` holds for the complete lines or `timeout` seconds pass;
    /// returns whether it held. Stops early if the child closes its output (exits).
    func waitFor(timeout: Double, _ predicate: ([String]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let open = drain()
            if predicate(lines) { return true }
            if !open { return false }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return false }
            var fds = [pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, Int32(min(left, 0.05) * 1000) + 1)
        }
    }

    /// Keeps draining output for `seconds` (so that the child never blocks on a full pipe).
    func run(for seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let open = drain()
            let left = deadline.timeIntervalSinceNow
            if left <= 0 || !open { return }
            var fds = [pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, Int32(min(left, 0.05) * 1000) + 1)
        }
    }

    /// Sends SIGKILL, waits for the child to die and collects everything it wrote.
    /// Returns the raw wait status.
    @discardableResult
    func killAndWait() -> Int32 {
        if exitStatus == nil { kill(pid, SIGKILL) }
        let status = reap()
        drain()
        return status
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

    /// Whether the wait status says the child was killed by `signal`.
    static func killed(_ status: Int32, by signal: Int32) -> Bool {
        (status & 0x7F) == signal
    }
}

struct CrashHelperError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension FileSystem {
    /// The real file system with `faults` consulted before every call: a store or engine opened
    /// with it (``StoreOptions/fileSystem``, ``EngineOptions/fileSystem``) fails where the test's
    /// hook says, and no other store does, so such tests run in parallel.
    static func injecting(_ faults: IOFaults) -> FileSystem {
        FileSystem(environment: IOEnvironment(faults: faults))
    }
}
