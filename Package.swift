// swift-tools-version: 6.0
import PackageDescription

// `STRATA_INVARIANTS=1 swift build` compiles the checks of the engine's invariants
// (StrataFormat/Invariants.swift) into every library target; other builds carry none of them.
let invariants: [SwiftSetting] = Context.environment["STRATA_INVARIANTS"] == "1" ? [.define("STRATA_INVARIANTS")] : []

let package = Package(
    name: "Strata",
    // The library uses the standard library's `Mutex` and `Atomic` (Synchronization), which
    // Apple's systems have from these versions on; Linux needs nothing.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        // The inspectors of logs, segments and whole stores and the verifier behind strata-dump,
        // for programs that read a store's files without opening it; kept out of Strata so that
        // its API is the store's. Each collection kind's inspector (and its strata-dump view) is
        // in the kind's folder in Strata, which StrataInspection re-exports.
        .library(name: "StrataInspection", targets: ["StrataInspection"]),
        .executable(name: "strata-dump", targets: ["strata-dump"]),
        .executable(name: "strata-quickstart", targets: ["strata-quickstart"]),
    ],
    dependencies: [
        // `swift package generate-documentation --target Strata` (README "Documentation",
        // Scripts/docs) builds the DocC catalog, Sources/Strata/Strata.docc; a plugin only.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The library needs only swift-log 1.0's API; the tests' log handler implements
        // `log(event:)`, which 1.11 added.
        .package(url: "https://github.com/apple/swift-log", from: "1.11.0"),
        // AES-256-GCM, HKDF and HMAC for encryption at rest (StoreOptions.encryptionKey,
        // StrataFiles/Encryption): CryptoKit's API, on BoringSSL on Linux. Either major version.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // liblz4 through pkg-config; Debian's liblz4-dev and Homebrew's lz4 provide the header
        // and the .pc file. Only Sources/Strata/Format/LZ4.swift imports it.
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // Small C helpers the byte layers need: hardware CRC32C and acquire/release atomics.
        .target(name: "CStrataSupport"),
        // The layers, each a target so that a layer can import only the layers below it
        // (DESIGN.md "Layers"): bytes, then files, then the engine, then the store and its
        // collections. Declarations a higher layer uses are `package` (the per-record paths'
        // types are `@_spi(Layers) public`, so that their `@inlinable` members inline across
        // layers); users see `public` ones through `Strata`, which re-exports the layers below it.
        // The vocabulary every layer speaks: `StrataError` and the names its cases carry
        // (`NotFoundKind`, `Permission`). Nothing else; StrataFormat re-exports it.
        .target(
            name: "StrataBase",
            dependencies: ["CStrataSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        .target(
            name: "StrataFormat",
            dependencies: ["StrataBase", "CLZ4", "CStrataSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants,
            // Unicode collation of index keys uses the ICU the Swift toolchain ships for
            // Foundation on Linux (module `_FoundationICU`); nothing to install.
            linkerSettings: [.linkedLibrary("_FoundationICU", .when(platforms: [.linux]))]
        ),
        .target(
            name: "StrataFiles",
            dependencies: ["StrataFormat", "CStrataSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        .target(
            name: "StrataEngine",
            dependencies: ["StrataFormat", "StrataFiles", "CStrataSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        .target(
            name: "Strata",
            dependencies: ["StrataFormat", "StrataFiles", "StrataEngine", "CStrataSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        .target(
            name: "StrataInspection",
            dependencies: ["Strata"],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        .executableTarget(
            name: "strata-dump",
            dependencies: [
                "Strata",
                "StrataInspection",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        .executableTarget(
            name: "strata-quickstart",
            dependencies: ["Strata"],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        // The engine-core performance program (Strata.docc/Performance.md); same workload as
        // Scripts/perf/rocksdb_baseline.c.
        .executableTarget(
            name: "strata-perf",
            dependencies: ["Strata", "CStrataSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        // The child process of the crash tests: writes acknowledged batches until it is killed.
        .executableTarget(
            name: "strata-crash-helper",
            dependencies: ["Strata"],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: ["Strata", "StrataBase", "StrataFormat", "StrataFiles", "StrataEngine", "StrataInspection", "strata-crash-helper", "strata-dump"],
            swiftSettings: [.swiftLanguageMode(.v6)] + invariants
        ),
        // The API as a program sees it: `import Strata` without `@testable`. Hand-written tests
        // of the public surface, and in Snippets/ every Swift block of README.md and the DocC
        // articles, generated by Scripts/extract-snippets (compiled, not run). swift-log only
        // for the snippets that pass a `Logger` in `StoreOptions`, as a program would.
        .testTarget(
            name: "StrataAPITests",
            dependencies: ["Strata", .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
