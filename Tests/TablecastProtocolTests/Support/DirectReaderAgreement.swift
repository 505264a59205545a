import TablecastTesting
import XCTest

/// Holds a direct reader to the general decoder of the parsed tree: on every prefix of `samples` and on 30,000 random
/// mutations of them, whatever `direct` takes equals what `viaTree` decodes (a refusal from `direct` is left to the
/// general decoder, whose errors other tests compare). `complete` is how many of the samples `direct` takes whole,
/// and `keyLetters` the letters of the keys that mutations insert besides JSON's own bytes.
func assertDirectReaderAgrees<Message: Equatable>(
    samples: [String], taking complete: Int, of what: String, keyLetters: String,
    direct: ([UInt8]) -> Message?, viaTree: ([UInt8]) throws -> Message,
    file: StaticString = #filePath, line: UInt = #line
) {
    let seed = UInt64.random(in: 0...UInt64.max)
    var g = SeededGenerator(seed: seed)
    let alphabet = Array(#"{}[]":,\ 0123456789-.etrufalsn"#.utf8) + Array(keyLetters.utf8) + [0x0A, 0xC3, 0xA9]
    var taken = 0
    func check(_ bytes: [UInt8]) {
        guard let read = direct(bytes) else { return }
        taken += 1
        let tree = Result { try viaTree(bytes) }
        XCTAssertEqual(
            try? tree.get(), read, "seed \(seed): \(String(decoding: bytes, as: UTF8.self)) \(tree)", file: file,
            line: line)
    }
    for text in samples {
        let bytes = Array(text.utf8)
        for length in 0...bytes.count { check(Array(bytes[..<length])) }
    }
    XCTAssertEqual(
        taken, complete, "the complete \(what) the reader takes, and nothing truncated", file: file, line: line)
    for _ in 0..<30_000 {
        var bytes = Array(samples.randomElement(using: &g)!.utf8)
        bytes.mutateRandomly(edits: 1...2, alphabet: alphabet, using: &g)
        check(bytes)
    }
    XCTAssertGreaterThan(
        taken, complete + 300, "seed \(seed): the reader took too few mutated messages to compare", file: file,
        line: line)
}
