import Foundation
import Testing

// A port to another system is one file for the OS (StrataFiles/SystemCalls.swift), one for LZ4
// (StrataFormat/LZ4.swift) and one for CRC32C (StrataFormat/CRC32C.swift and its C helper): these checks keep
// every other file of the library's targets from reaching past those seams.

/// The library's Swift files (every target under Sources/ but the executables), relative to
/// Sources/, with their text.
private func librarySources() throws -> [(path: String, text: String)] {
    let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources").path
    let targets = try FileManager.default.contentsOfDirectory(atPath: sources)
        .filter { $0.hasPrefix("Strata") }  // the libraries; executables are named strata-…
    var files: [(String, String)] = []
    for target in targets.sorted() {
        guard let walk = FileManager.default.enumerator(atPath: sources + "/" + target) else { continue }
        for case let relative as String in walk where relative.hasSuffix(".swift") {
            let path = target + "/" + relative
            files.append((path, try String(contentsOfFile: sources + "/" + path, encoding: .utf8)))
        }
    }
    return files
}

/// The paths among `files` with a line matching `pattern`.
private func filesMatching(_ pattern: String, in files: [(path: String, text: String)]) throws -> [String] {
    let regex = try NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
    return files.filter { file in
        regex.firstMatch(in: file.text, range: NSRange(file.text.startIndex..., in: file.text)) != nil
    }.map(\.path).sorted()
}

@Suite struct PlatformSeamTests {
    @Test func onlySystemCallsImportsTheOperatingSystem() throws {
        let files = try librarySources()
        #expect(files.count > 50)
        let importers = try filesMatching(#"^\s*(@\w+\s+)*import\s+(Glibc|Darwin|Musl|Android|WinSDK|ucrt)\b"#, in: files)
        #expect(importers == ["StrataFiles/SystemCalls.swift"])
    }

    /// Foundation re-exports the C library on Linux, so a file that imports Foundation compiles
    /// with a raw call; this finds the calls Strata makes through the seam anywhere else.
    @Test func noRawSystemCallOutsideTheSeam() throws {
        // (`open`, `read`, `write`, `close`, `rename` are left out: Strata's own methods have them.)
        let names = "memcmp|memcpy|memmove|pread|pwrite|fsync|fdatasync|fcntl|ftruncate|lseek|fstat|"
            + "stat|unlink|mkdir|rmdir|opendir|readdir|closedir|flock|mmap|munmap|madvise|getpid|"
            + "strerror|clock_gettime|pthread_[a-z_]+"
        // A call of a free function: not a method (`.read(`), a declaration (`func read(`) or a
        // label, and not in a comment.
        let call = #"^(?!\s*//)[^"\n]*(?<![.\w])(?<!func )(?<!case )("# + names + #")\("#
        let offenders = try filesMatching(call, in: try librarySources())
            .filter { $0 != "StrataFiles/SystemCalls.swift" }
        #expect(offenders == [])
    }

    @Test func onlyTheLZ4SeamImportsLiblz4() throws {
        let importers = try filesMatching(#"^\s*(@\w+\s+)*import\s+CLZ4\b"#, in: try librarySources())
        #expect(importers == ["StrataFormat/LZ4.swift"])
    }

    @Test func onlyTheCRC32CSeamCallsTheCRCHelper() throws {
        let callers = try filesMatching(#"strata_crc32c_"#, in: try librarySources())
        #expect(callers == ["StrataFormat/CRC32C.swift"])
    }
}
