@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Why an inspection could not start: the path names nothing Strata can read.
///
/// Damage inside a Strata file is not an ``InspectionError``: the readers report it as
/// `StrataError.corrupted(file:offset:reason:)` (or
/// `StrataError.unsupportedFormatVersion(file:found:)`), and `StoreVerifier` lists it as a fault.
public enum InspectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing exists at `path`.
    case notFound(path: String)
    /// `path` exists but is not the kind of file system object asked for (a directory where a
    /// file was expected, or the other way round).
    case notAFile(path: String, expected: String)
    /// The file carries no Strata magic: it is not a log, manifest or segment.
    case notAStrataFile(path: String)
    /// The file is a Strata file of another kind than the one asked for.
    case wrongKind(path: String, found: StrataFileKind, expected: StrataFileKind)
    /// The directory holds no Strata store (no `MANIFEST`, no logs, no segments).
    case notAStore(path: String)

    public var description: String {
        switch self {
        case .notFound(let path):
            return "\(path): no such file or directory"
        case .notAFile(let path, let expected):
            return "\(path): not \(expected)"
        case .notAStrataFile(let path):
            return "\(path): not a Strata file (no log, manifest or segment magic)"
        case .wrongKind(let path, let found, let expected):
            return "\(path): a Strata \(found.rawValue) file, not a \(expected.rawValue) file"
        case .notAStore(let path):
            return "\(path): not a Strata store (no MANIFEST, logs or segments)"
        }
    }
}

/// What a path is, from `stat` (not following the inspection into the file).
package enum PathStatus {
    case missing, regularFile(size: Int), directory, other

    /// `path` without trailing slashes (`/` stays `/`), as the tools name a store directory.
    package static func normalizedDirectory(_ path: String) -> String {
        var p = path
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        return p
    }

    package static func of(_ path: String) -> PathStatus {
        guard let status = try? SystemCalls.status(path) else { return .missing }
        switch status.kind {
        case .regularFile: return .regularFile(size: status.size)
        case .directory: return .directory
        case .other: return .other
        }
    }

    /// Throws unless `path` is a regular file; returns its size.
    package static func requireFile(_ path: String) throws -> Int {
        switch of(path) {
        case .missing: throw InspectionError.notFound(path: path)
        case .regularFile(let size): return size
        case .directory, .other: throw InspectionError.notAFile(path: path, expected: "a regular file")
        }
    }

    /// Throws unless `path` is a directory.
    package static func requireDirectory(_ path: String) throws {
        switch of(path) {
        case .missing: throw InspectionError.notFound(path: path)
        case .directory: return
        case .regularFile, .other: throw InspectionError.notAFile(path: path, expected: "a directory")
        }
    }
}
