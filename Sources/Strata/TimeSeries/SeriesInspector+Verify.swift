@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What `strata-dump verify` checks in the time series of a store: that every chunk's value kind
/// is the one its series' value type stores, with the check the library makes when it reads a
/// chunk (``SeriesChunk/checkValueKind(_:expected:chunkEnd:path:)``), for every chunk stored,
/// retained or not.
extension SeriesInspector {
    /// The findings in every time series of `snapshot`, each naming its series and chunk.
    package static func findings(in snapshot: Snapshot) throws -> [String] {
        var out: [String] = []
        for (path, entry) in try Catalog.entries(kind: .timeSeries, in: snapshot) where !path.isEmpty {
            let payload: SeriesPayload
            do {
                payload = try SeriesPayload.decode(entry.payload, name: path)
            } catch {
                out.append("\(error)")
                continue
            }
            let expected = SeriesChunk.valueKind(typeName: payload.typeName)
            let prefix = EventRecord.seriesPrefix(entry.id)
            let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
            while try cursor.next() {
                guard SeriesChunk.isChunk(cursor.value) else { continue }
                let key = cursor.withKey { Array($0) }
                do {
                    let header = try SeriesChunk.header(cursor.value)
                    let end = key.withUnsafeBytes { EventRecord.sequence(ofKey: $0, prefixLength: prefix.count) } ?? header.lastSequence
                    try SeriesChunk.checkValueKind(header.kind, expected: expected, chunkEnd: end, path: path)
                } catch {
                    out.append("time series \(path.debugDescription): chunk at key \(TupleKey.describe(key)): \(error)")
                }
            }
        }
        return out
    }
}
