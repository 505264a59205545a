// swift-tools-version: 6.1
import PackageDescription

/// Settings every target shares: Swift 6 language mode (strict concurrency) plus explicit `any`.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Tablecast",
    products: [
        .library(name: "TableModel", targets: ["TableModel"]),
        .library(name: "TableStore", targets: ["TableStore"]),
        .library(name: "WebSocketTransport", targets: ["WebSocketTransport"]),
        .library(name: "TablecastClient", targets: ["TablecastClient"]),
        .executable(name: "tablecast", targets: ["TablecastCLI"]),
        .executable(name: "table-model-bench", targets: ["TableModelBenchmark"]),
        .executable(name: "store-bench", targets: ["TableStoreBenchmark"]),
        .executable(name: "history-bench", targets: ["HistoryBenchmark"]),
        .executable(name: "websocket-bench", targets: ["WebSocketBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Signed tokens (JWT): signature checks with swift-crypto's keys; the claims are the server's own. It brings
        // swift-crypto (BoringSSL), swift-certificates and swift-asn1: a clean debug build takes about twice the CPU
        // time (README, "Tests").
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
    ],
    targets: [
        // Layer 1: C libraries, imported as system library targets with small shims.
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev", "libwebsockets-evlib-ev", "libev-dev", "libcap-dev", "libssl-dev"])]
        ),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // OpenSSL's libcrypto, which libwebsockets' TLS already brings: SHA-256 for token principals.
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // zlib, which libwebsockets already brings: deflate for the PNG load report.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // Layer 2: the table and its editing semantics as pure values.
        // libm: Double.rounded() needs it on Linux, where only Foundation would pull it in otherwise.
        .target(
            name: "TableModel", swiftSettings: swiftSettings,
            linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        .testTarget(
            name: "TableModelTests", dependencies: ["TableModel", "TablecastTesting"], swiftSettings: swiftSettings),
        // Prints the model's timings (swift run -c release table-model-bench); a figure, not a pass/fail test. Its
        // `json` group times the protocol's messages, hence TablecastProtocol.
        .executableTarget(
            name: "TableModelBenchmark", dependencies: ["TableModel", "TablecastTesting", "TablecastProtocol"],
            swiftSettings: swiftSettings),
        // The seeded random generator that randomized tests and benchmarks share.
        .target(name: "TablecastTesting", swiftSettings: swiftSettings),

        // Layer 3: the one memory budget the server's big consumers (histories, snapshots, queues) draw from.
        .target(name: "MemoryBudget", swiftSettings: swiftSettings),
        .testTarget(name: "MemoryBudgetTests", dependencies: ["MemoryBudget"], swiftSettings: swiftSettings),

        // Layer 3: the store of tables, log, snapshots and refs.
        .target(name: "TableStore", dependencies: ["CSQLite", "CLibPQ"], swiftSettings: swiftSettings),
        .testTarget(
            name: "TableStoreTests", dependencies: ["TableStore", "CSQLite", "TablecastTesting"],
            swiftSettings: swiftSettings),
        .executableTarget(name: "TableStoreBenchmark", dependencies: ["TableStore"], swiftSettings: swiftSettings),

        // Layer 3: WebSocket and HTTP transport over libwebsockets, server and client roles.
        .target(
            name: "WebSocketTransport",
            dependencies: [
                "CLibWebSockets", "MemoryBudget",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebSocketTransportTests",
            dependencies: [
                "WebSocketTransport", "TablecastTesting", "CLibCrypto",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "WebSocketBench",
            dependencies: [
                "WebSocketTransport", "TablecastTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: swiftSettings
        ),

        // Layer 3: the wire protocol: client messages decoded into intents, server messages encoded once.
        .target(name: "TablecastProtocol", dependencies: ["TableModel"], swiftSettings: swiftSettings),
        .testTarget(
            name: "TablecastProtocolTests", dependencies: ["TablecastProtocol", "TablecastTesting"],
            swiftSettings: swiftSettings),

        // Layer 4: the server: table actors, subscriptions, presence, access control.
        .target(
            name: "TablecastServer",
            dependencies: [
                "TableModel", "TablecastProtocol", "TableStore", "WebSocketTransport", "CLibCrypto", "MemoryBudget",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TablecastServerTests",
            dependencies: [
                "TablecastServer", "TableStore", "TablecastTesting", .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings),

        // Layer 4: the Swift client library: replicas, intents as async calls, reconnect and resume.
        .target(
            name: "TablecastClient",
            dependencies: [
                "TableModel", "TablecastProtocol", "WebSocketTransport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TablecastClientTests",
            dependencies: [
                "TablecastClient", "TablecastServer", "TablecastTesting",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),

        // Layer 5: the live terminal editor's pure logic (screen model, keys, layout, widths), tested without a terminal.
        .target(
            name: "TablecastEditor", dependencies: ["TableModel", "TablecastProtocol"], swiftSettings: swiftSettings),
        .testTarget(name: "TablecastEditorTests", dependencies: ["TablecastEditor"], swiftSettings: swiftSettings),

        // Prints how fast the table at a past version is answered, and history's disk cost (swift run -c release
        // history-bench); a figure, not a pass/fail test.
        .executableTarget(
            name: "HistoryBenchmark",
            dependencies: [
                "TablecastServer", "TablecastClient", "TableStore", "TableModel", "TablecastProtocol",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),

        // Layer 5: the `tablecast` executable: serve, compact and the clients, with the browser page embedded (the
        // EmbedPage plugin runs PageEmbedder on web-client-protocol/client at build time).
        .executableTarget(name: "PageEmbedder", swiftSettings: swiftSettings),
        .plugin(name: "EmbedPage", capability: .buildTool(), dependencies: ["PageEmbedder"]),
        .executableTarget(
            name: "TablecastCLI",
            dependencies: [
                "TablecastServer", "TableStore", "TableModel", "TablecastClient", "TablecastProtocol",
                "WebSocketTransport",
                "TablecastEditor", "MemoryBudget", "CZlib",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings,
            plugins: ["EmbedPage"]
        ),
        // The command line's pure parts (the load generator's series, stage plan and workers' merge), reached with
        // @testable import of the executable target.
        .testTarget(
            name: "TablecastCLITests",
            dependencies: [
                "TablecastCLI", "TablecastTesting", .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: swiftSettings),
    ]
)
