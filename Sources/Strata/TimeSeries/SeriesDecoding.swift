@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What decoding an event record needs besides its bytes: the series' timestamp base and authors.
struct SeriesDecoding: Sendable {
    let base: Int64
    let authors: [String]
}
