import Foundation
import XCTest

@testable import TableStore

/// A process killed with SIGKILL while committing loses nothing whose commit had returned.
///
/// The child is this test binary run again on `testChildCommitsUntilKilled`, which only works when the parent
/// names the database in `childDatabaseVariable`. SIGKILL ends the process, not the machine: this checks that a
/// returned commit is in the WAL, not that the disk honours fsync on power loss.
final class TableStoreCrashTests: XCTestCase {
    private static let childDatabaseVariable = "TABLESTORE_CRASH_CHILD_DATABASE"
    private static let committedPrefix = "committed "

    func testCommitsThatReturnedSurviveSIGKILL() throws {
        let path = try makeTemporaryDirectory(for: self).appendingPathComponent("crash.db").path
        do {
            let store = try SQLiteTableStore(path: path)
            try store.createTestTable("a")
            try store.createTestTable("b")
            try store.close()
        }

        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["TableStoreTests.TableStoreCrashTests/testChildCommitsUntilKilled"]
        child.environment = ProcessInfo.processInfo.environment.merging([Self.childDatabaseVariable: path]) { $1 }
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()

        // Let it commit a few hundred groups, then kill it in the middle of whatever it is doing.
        var text = ""
        let deadline = Date().addingTimeInterval(60)
        while Self.committedVersions(in: text).count < 300, Date() < deadline {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        text += String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(child.terminationReason, .uncaughtSignal)

        let acknowledged = Self.committedVersions(in: text)
        let last = try XCTUnwrap(acknowledged.last, "the child committed nothing:\n\(text)")
        XCTAssertGreaterThanOrEqual(acknowledged.count, 300)
        XCTAssertEqual(acknowledged, Array(1...last))

        let store = try SQLiteTableStore(path: path)
        for table in ["a", "b"] {
            let loaded = try store.load(table)
            // The child may have committed one more group than it got to print.
            XCTAssertTrue(
                [last, last + 1].contains(loaded.info.version), "\(table) at \(loaded.info.version), last \(last)")
            XCTAssertEqual(loaded.log.map(\.version), Array(1...loaded.info.version))
            XCTAssertEqual(try store.ack(client: "child", ref: "\(table)\(last)")?.version, last)
        }
    }

    /// The child's side: commits a group to tables a and b per version and reports each once `commit` returns.
    func testChildCommitsUntilKilled() throws {
        guard let path = ProcessInfo.processInfo.environment[Self.childDatabaseVariable] else {
            throw XCTSkip("runs only as the child process of testCommitsThatReturnedSurviveSIGKILL")
        }
        let store = try SQLiteTableStore(path: path)
        // Bounded so that an orphaned child stops by itself.
        for version in Int64(1)...100_000 {
            try store.commit([
                record("a", version, client: "child", ref: "a\(version)"),
                record("b", version, client: "child", ref: "b\(version)"),
            ])
            FileHandle.standardOutput.write(Data("\(Self.committedPrefix)\(version)\n".utf8))
        }
    }

    private static func committedVersions(in text: String) -> [Int64] {
        // Only whole lines: the last one may still be arriving.
        text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().compactMap { line in
            line.hasPrefix(committedPrefix) ? Int64(line.dropFirst(committedPrefix.count)) : nil
        }
    }
}
