import TablecastTesting
import XCTest

@testable import WebSocketTransport

/// Random frame streams for both roles, whole and mutated, fed in random pieces: the parser never traps, what it
/// returns does not depend on how the bytes were split, a valid stream comes out frame for frame, and no frame it
/// returns breaks a limit. A failure prints its seed.
final class FrameParserFuzzTests: XCTestCase {
    private static let limit = 4_096

    private struct Generated {
        var bytes: [UInt8] = []
        var frames: [FrameParser.Frame] = []
    }

    /// A valid stream: data messages of one or more fragments, control frames between any two frames.
    private static func stream(masked: Bool, using random: inout SeededGenerator) -> Generated {
        var generated = Generated()
        func add(_ opcode: FrameParser.Opcode, fin: Bool, length: Int) {
            let payload = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            generated.frames.append(FrameParser.Frame(fin: fin, opcode: opcode, payload: payload))
            let mask = masked ? (0..<4).map { _ in UInt8.random(in: .min ... .max, using: &random) } : nil
            generated.bytes += RawSocket.frame(opcode: opcode.rawValue, fin: fin, payload: payload, mask: mask)
        }
        func dataLength() -> Int {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: Int.random(in: 126...600, using: &random)
            case 1: 0
            default: Int.random(in: 1...40, using: &random)
            }
        }
        for _ in 0..<Int.random(in: 1...6, using: &random) {
            let fragments = Int.random(in: 1...3, using: &random)
            for index in 0..<fragments {
                if Bool.random(using: &random) {
                    let control: [FrameParser.Opcode] = [.ping, .pong, .close]
                    add(
                        control.randomElement(using: &random)!, fin: true,
                        length: Int.random(in: 0...125, using: &random))
                }
                let opcode: FrameParser.Opcode =
                    index > 0 ? .continuation : Bool.random(using: &random) ? .text : .binary
                add(opcode, fin: index == fragments - 1, length: dataLength())
            }
        }
        return generated
    }

    /// Feeds `bytes` in pieces of the given sizes (the rest at once at the end) and returns what came out up to the
    /// first violation, tracking what a connection would have assembled of the message in progress.
    private static func parse(
        _ bytes: [UInt8], masked: Bool, skipsData: Bool, pieces: [Int]
    ) -> [FrameParser.Output] {
        var parser = FrameParser(readsMaskedFrames: masked)
        parser.skipsData = skipsData
        var outputs: [FrameParser.Output] = []
        var assembled = 0
        var offset = 0
        var sizes = pieces[...]
        while offset < bytes.count {
            let size = min(sizes.popFirst() ?? bytes.count, bytes.count - offset)
            bytes[offset..<(offset + size)].withUnsafeBytes { parser.append($0) }
            offset += size
            while let output = parser.next(assembled: assembled, limit: limit) {
                outputs.append(output)
                guard case .frame(let frame) = output else { return outputs }
                if !frame.opcode.isControl { assembled = frame.fin ? 0 : assembled + frame.payload.count }
            }
        }
        return outputs
    }

    func testRandomStreamsWholeAndMutatedAnyHowSplit() {
        let interesting: [UInt8] = [
            0x00, 0x01, 0x02, 0x08, 0x09, 0x0A, 0x0B, 0x7D, 0x7E, 0x7F, 0x80, 0x81, 0x82, 0x88, 0xFF,
        ]
        for seed in UInt64(0)..<4_000 {
            var random = SeededGenerator(seed: seed)
            let masked = seed % 2 == 0
            let skipsData = seed % 7 == 0
            var generated = Self.stream(masked: masked, using: &random)
            let mutated = seed % 3 != 0
            if mutated {
                generated.bytes.mutateRandomly(
                    edits: 1...4, alphabet: interesting + [UInt8.random(in: .min ... .max, using: &random)],
                    using: &random)
            }
            let pieces = (0..<64).map { _ in Int.random(in: 1...(Bool.random(using: &random) ? 3 : 200), using: &random)
            }
            let whole = Self.parse(generated.bytes, masked: masked, skipsData: skipsData, pieces: [])
            let split = Self.parse(generated.bytes, masked: masked, skipsData: skipsData, pieces: pieces)
            XCTAssertEqual(whole, split, "seed \(seed): the output depends on how the bytes were split")
            for case .frame(let frame) in whole {
                XCTAssertLessThanOrEqual(
                    frame.payload.count, frame.opcode.isControl ? 125 : Self.limit, "seed \(seed): over a limit")
                XCTAssertFalse(skipsData && !frame.opcode.isControl, "seed \(seed): a skipped data frame came out")
            }
            if !mutated {
                let expected = generated.frames.filter { !skipsData || $0.opcode.isControl }.map(
                    FrameParser.Output.frame)
                XCTAssertEqual(whole, expected, "seed \(seed): a valid stream did not come out frame for frame")
            }
            // The other role refuses the stream at its first frame.
            let other = Self.parse(generated.bytes, masked: !masked, skipsData: false, pieces: [])
            if !mutated, case .violation(let frame)? = other.first {
                XCTAssertEqual(frame.code, .protocolError, "seed \(seed)")
            } else if !mutated {
                XCTFail("seed \(seed): the other role read \(other.first.map { "\($0)" } ?? "nothing")")
            }
        }
    }
}
