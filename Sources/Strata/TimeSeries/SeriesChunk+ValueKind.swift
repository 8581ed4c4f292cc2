@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension SeriesChunk {
    /// A chunk's value column kind must be the one its series' value type stores (FORMAT.md
    /// §14.6: `Double` 1, `Int64` 2, any other type 0): a chunk of integers inside a `Double`
    /// series would otherwise read its bit patterns as other numbers, and one of raw bytes would
    /// hand the decoder bytes no writer stored for that type. Throws a corruption naming the
    /// series and the chunk.
    static func checkValueKind(_ kind: UInt8, expected: UInt8, chunkEnd: some BinaryInteger, path: String) throws {
        guard kind == expected else {
            throw StrataError.corrupted(file: "time series \"\(path)\"", offset: 0,
                                        reason: "event \(chunkEnd): the chunk ending at \(chunkEnd) has value kind \(kind); the series' values are kind \(expected)")
        }
    }
}

extension SeriesReader {
    /// The value column kind of a series of type `typeName` (``SeriesChunk/valueKind(typeName:)``),
    /// for the tools (StrataInspection), which make their own readers.
    package static func valueKind(typeName: String) -> UInt8 { SeriesChunk.valueKind(typeName: typeName) }
}
