@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// FORMAT.md §8: within a store, a log's format version never goes down. Logs are read in number
/// order, and a build writes only its own log version, so a log numbered above a version-2 log is
/// version 2; and the builds that write version-2 manifests write only version-2 logs and create one
/// at every open (kept until every older log is flushed), so under a version-2 manifest the newest
/// log with a header is version 2. A header rewritten from version 2 to 1 (its CRC recomputed)
/// would otherwise turn every record into a torn tail, discarded without a word. Used by recovery
/// and by `strata-dump verify`; a fault names the log's version field (offset 8).
package struct LogVersionOrder {
    private let manifestVersion: UInt32
    private var newest: (version: UInt32, path: String)?

    /// `manifestVersion`: the version of the manifest the logs are replayed under.
    package init(manifestVersion: UInt32) {
        self.manifestVersion = manifestVersion
    }

    /// The next log in number order (`version` nil for a log whose header was torn).
    package mutating func check(version: UInt32?, path: String) throws {
        guard let version else { return }
        if let newest, version < newest.version {
            throw StrataError.corrupted(file: path, offset: 8, reason:
                "log version \(version) after a log of version \(newest.version) (\(newest.path)): a store's log versions never go down")
        }
        newest = (version, path)
    }

    /// After the last log.
    package func finish() throws {
        if manifestVersion >= 2, let newest, newest.version < 2 {
            throw StrataError.corrupted(file: newest.path, offset: 8, reason:
                "the newest log is version \(newest.version) under a version \(manifestVersion) manifest, whose builds write only version 2 logs")
        }
    }
}
