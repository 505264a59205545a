import TableModel
import TablecastClient
import TablecastProtocol
import TablecastTesting
import XCTest

/// A client given several nodes on one PostgreSQL database moves to the next when its node goes away.
final class FailoverTests: XCTestCase {
    func testAClientWithSeveralURLsFailsOverAndResumesWithoutAGap() async throws {
        let database = try PostgresCluster.shared().createDatabase(prefix: "failover")
        let first = try await TestServer(database: database)
        let second = try await TestServer(database: database)
        let client = try TablecastClient(
            configuration: .init(
                url: "\(first.url), \(second.url)", clientID: "failover",
                backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(200))))
        let events = client.events()
        client.connect()
        try await client.createTable("list", sections: [SectionContent()])
        try await client.subscribe("list")
        for i in 0..<20 {
            try await client.insert("list", at: RowPath(section: 0, row: i), value: .number(Double(i)), base: .current)
        }
        // Its node stops; the client goes on with the other one.
        await first.stop()
        for i in 20..<40 {
            try await client.insert("list", at: RowPath(section: 0, row: i), value: .number(Double(i)), base: .current)
        }
        let truth = try await second.snapshot("list")
        XCTAssertEqual(truth.table.sections[0].rows.map(\.value), (0..<40).map { .number(Double($0)) })
        try await eventually { client.replica(of: "list")?.version == truth.version }
        XCTAssertTrue(client.replica(of: "list")!.hasSameContents(as: truth))
        await client.close()
        var snapshots = 0
        var lives = 0
        for await event in events {
            if case .snapshot = event { snapshots += 1 }
            if case .state(.live) = event { lives += 1 }
        }
        XCTAssertEqual(lives, 2, "connected, then failed over once")
        XCTAssertEqual(snapshots, 1, "resumed on the other node with since/epoch: updates, not a second snapshot")
        await second.tearDown()
        await first.tearDown()
    }
}
