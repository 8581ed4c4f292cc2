// swift-tools-version:6.0
import PackageDescription

/// strata-gateway: the HTTP gateway that Strata's replicator talks to (see PROTOCOL.md).
/// Its own package so that programs embedding Strata never resolve these dependencies.
let package = Package(
    name: "StrataGateway",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "strata-gateway", targets: ["StrataGateway"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        // The same range as Strata's and PushDelivery's, so that the three packages resolve one
        // version and Scripts/test builds it once for the gateway and the push delivery.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
    ],
    targets: [
        .executableTarget(
            name: "StrataGateway",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Sources/StrataGateway",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
