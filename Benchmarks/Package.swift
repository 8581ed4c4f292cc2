// swift-tools-version: 6.1
// strata-bench: Strata side by side with SQLite (through GRDB) and RocksDB, on named workloads.
// A package of its own, so that programs embedding Strata never resolve the peers' packages.
import PackageDescription

let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // The RocksDB C API (rocksdb/c.h) through pkg-config; Debian's librocksdb-dev ships rocksdb.pc.
        .systemLibrary(
            name: "CRocksDB",
            pkgConfig: "rocksdb",
            providers: [.apt(["librocksdb-dev"])]
        ),
        // liblz4 (lz4.h) for ts-scan's reference: LZ4 decompression bandwidth measured in the same run.
        .systemLibrary(
            name: "CBenchLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),
        // glibc's mallinfo2 (malloc.h), which Swift's Glibc module does not show: the heap bytes
        // in use, for push-open's memory per subscription.
        .target(name: "CBenchMalloc"),
        .executableTarget(
            name: "strata-bench",
            dependencies: [
                "CBenchMalloc",
                "CRocksDB",
                "CBenchLZ4",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Strata", package: "Strata"),
                .product(name: "StrataInspection", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
