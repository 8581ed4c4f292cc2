// swift-tools-version: 6.0
// StrataPushDelivery: the delivery of a store's push outbox to Apple's (APNs) and Google's (FCM HTTP v1)
// push services. A package of its own, depending on Strata by path as Benchmarks/ does, so that
// programs that never push resolve none of its dependencies (HTTP/2, TLS).
import PackageDescription

let package = Package(
    name: "StrataPushDelivery",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "StrataPushDelivery", targets: ["StrataPushDelivery"]),
        // Protocol-faithful APNs and FCM peers on loopback (HTTP/2 over TLS with a test CA made at
        // start), for this package's tests and strata-bench push-deliver; never for production.
        .library(name: "StrataPushPeers", targets: ["StrataPushPeers"]),
    ],
    dependencies: [
        .package(name: "Strata", path: ".."),
        // HTTP/2 over TLS to APNs, HTTPS to FCM and its token endpoint.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.21.0"),
        // ES256 provider tokens (APNs), RS256 assertions (FCM, _CryptoExtras); version 4, whose keys
        // are Sendable (Strata's own range, 3.12.3..<5, includes it).
        .package(url: "https://github.com/apple/swift-crypto", "4.0.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.11.0"),
        // The peers: an HTTP/2 + TLS server, and the test CA's certificates.
        .package(url: "https://github.com/apple/swift-nio", from: "2.65.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.27.0"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.0.0"),
    ],
    targets: [
        .target(
            name: "StrataPushDelivery",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "StrataPushPeers",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The child process of the crash tests: opens a store and delivers its outbox until killed.
        .executableTarget(
            name: "strata-push-crash-helper",
            dependencies: ["StrataPushDelivery", .product(name: "Strata", package: "Strata")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // strata-bench push-deliver's measurement (Benchmarks/ runs it): the outbox through the
        // delivery to the loopback APNs peer, in this package so that strata-bench resolves no NIO.
        .executableTarget(
            name: "strata-push-bench",
            dependencies: ["StrataPushDelivery", "StrataPushPeers", .product(name: "Strata", package: "Strata"),
                           .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "StrataPushDeliveryTests",
            dependencies: [
                "StrataPushDelivery",
                "StrataPushPeers",
                .product(name: "Strata", package: "Strata"),
                // A raw client for the peers' own tests.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
