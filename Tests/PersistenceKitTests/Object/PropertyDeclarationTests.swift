import Foundation
import TestSupport
import Testing
import PersistenceKit

// `@Attribute` and `@Relationship` store only a one-byte mark in each object; what they
// declare is recorded while the model is built (PropertyDeclarations.swift). These tests pin
// that down: the size, classes with more wrappers than one recording holds, the declared
// default read back later, and models built on many threads at once.

/// More wrappers than one prototype records (254): the model needs three windows.
final class PDWide: NSManagedObject {
    @Attribute var a0: Int64 = 0
    @Attribute var a1: Int64 = 1
    @Attribute var a2: Int64 = 2
    @Attribute(.indexed) var a3: Int64 = 3
    @Attribute var a4: Int64 = 4
    @Attribute var a5: Int64 = 5
    @Attribute var a6: Int64 = 6
    @Attribute var a7: Int64 = 7
    @Attribute var a8: Int64 = 8
    @Attribute var a9: Int64 = 9
    @Attribute(.indexed) var a10: Int64 = 10
    @Attribute var a11: Int64 = 11
    @Attribute var a12: Int64 = 12
    @Attribute var a13: Int64 = 13
    @Attribute var a14: Int64 = 14
    @Attribute var a15: Int64 = 15
    @Attribute var a16: Int64 = 16
    @Attribute(.indexed) var a17: Int64 = 17
    @Attribute var a18: Int64 = 18
    @Attribute var a19: Int64 = 19
    @Attribute var a20: Int64 = 20
    @Attribute var a21: Int64 = 21
    @Attribute var a22: Int64 = 22
    @Attribute var a23: Int64 = 23
    @Attribute(.indexed) var a24: Int64 = 24
    @Attribute var a25: Int64 = 25
    @Attribute var a26: Int64 = 26
    @Attribute var a27: Int64 = 27
    @Attribute var a28: Int64 = 28
    @Attribute var a29: Int64 = 29
    @Attribute var a30: Int64 = 30
    @Attribute(.indexed) var a31: Int64 = 31
    @Attribute var a32: Int64 = 32
    @Attribute var a33: Int64 = 33
    @Attribute var a34: Int64 = 34
    @Attribute var a35: Int64 = 35
    @Attribute var a36: Int64 = 36
    @Attribute var a37: Int64 = 37
    @Attribute(.indexed) var a38: Int64 = 38
    @Attribute var a39: Int64 = 39
    @Attribute var a40: Int64 = 40
    @Attribute var a41: Int64 = 41
    @Attribute var a42: Int64 = 42
    @Attribute var a43: Int64 = 43
    @Attribute var a44: Int64 = 44
    @Attribute(.indexed) var a45: Int64 = 45
    @Attribute var a46: Int64 = 46
    @Attribute var a47: Int64 = 47
    @Attribute var a48: Int64 = 48
    @Attribute var a49: Int64 = 49
    @Attribute var a50: Int64 = 50
    @Attribute var a51: Int64 = 51
    @Attribute(.indexed) var a52: Int64 = 52
    @Attribute var a53: Int64 = 53
    @Attribute var a54: Int64 = 54
    @Attribute var a55: Int64 = 55
    @Attribute var a56: Int64 = 56
    @Attribute var a57: Int64 = 57
    @Attribute var a58: Int64 = 58
    @Attribute(.indexed) var a59: Int64 = 59
    @Attribute var a60: Int64 = 60
    @Attribute var a61: Int64 = 61
    @Attribute var a62: Int64 = 62
    @Attribute var a63: Int64 = 63
    @Attribute var a64: Int64 = 64
    @Attribute var a65: Int64 = 65
    @Attribute(.indexed) var a66: Int64 = 66
    @Attribute var a67: Int64 = 67
    @Attribute var a68: Int64 = 68
    @Attribute var a69: Int64 = 69
    @Attribute var a70: Int64 = 70
    @Attribute var a71: Int64 = 71
    @Attribute var a72: Int64 = 72
    @Attribute(.indexed) var a73: Int64 = 73
    @Attribute var a74: Int64 = 74
    @Attribute var a75: Int64 = 75
    @Attribute var a76: Int64 = 76
    @Attribute var a77: Int64 = 77
    @Attribute var a78: Int64 = 78
    @Attribute var a79: Int64 = 79
    @Attribute(.indexed) var a80: Int64 = 80
    @Attribute var a81: Int64 = 81
    @Attribute var a82: Int64 = 82
    @Attribute var a83: Int64 = 83
    @Attribute var a84: Int64 = 84
    @Attribute var a85: Int64 = 85
    @Attribute var a86: Int64 = 86
    @Attribute(.indexed) var a87: Int64 = 87
    @Attribute var a88: Int64 = 88
    @Attribute var a89: Int64 = 89
    @Attribute var a90: Int64 = 90
    @Attribute var a91: Int64 = 91
    @Attribute var a92: Int64 = 92
    @Attribute var a93: Int64 = 93
    @Attribute(.indexed) var a94: Int64 = 94
    @Attribute var a95: Int64 = 95
    @Attribute var a96: Int64 = 96
    @Attribute var a97: Int64 = 97
    @Attribute var a98: Int64 = 98
    @Attribute var a99: Int64 = 99
    @Relationship(inverse: "early") var earlyPeer: PDPeer?
    @Attribute var a100: Int64 = 100
    @Attribute(.indexed) var a101: Int64 = 101
    @Attribute var a102: Int64 = 102
    @Attribute var a103: Int64 = 103
    @Attribute var a104: Int64 = 104
    @Attribute var a105: Int64 = 105
    @Attribute var a106: Int64 = 106
    @Attribute var a107: Int64 = 107
    @Attribute(.indexed) var a108: Int64 = 108
    @Attribute var a109: Int64 = 109
    @Attribute var a110: Int64 = 110
    @Attribute var a111: Int64 = 111
    @Attribute var a112: Int64 = 112
    @Attribute var a113: Int64 = 113
    @Attribute var a114: Int64 = 114
    @Attribute(.indexed) var a115: Int64 = 115
    @Attribute var a116: Int64 = 116
    @Attribute var a117: Int64 = 117
    @Attribute var a118: Int64 = 118
    @Attribute var a119: Int64 = 119
    @Attribute var a120: Int64 = 120
    @Attribute var a121: Int64 = 121
    @Attribute(.indexed) var a122: Int64 = 122
    @Attribute var a123: Int64 = 123
    @Attribute var a124: Int64 = 124
    @Attribute var a125: Int64 = 125
    @Attribute var a126: Int64 = 126
    @Attribute var a127: Int64 = 127
    @Attribute var a128: Int64 = 128
    @Attribute(.indexed) var a129: Int64 = 129
    @Attribute var a130: Int64 = 130
    @Attribute var a131: Int64 = 131
    @Attribute var a132: Int64 = 132
    @Attribute var a133: Int64 = 133
    @Attribute var a134: Int64 = 134
    @Attribute var a135: Int64 = 135
    @Attribute(.indexed) var a136: Int64 = 136
    @Attribute var a137: Int64 = 137
    @Attribute var a138: Int64 = 138
    @Attribute var a139: Int64 = 139
    @Attribute var a140: Int64 = 140
    @Attribute var a141: Int64 = 141
    @Attribute var a142: Int64 = 142
    @Attribute(.indexed) var a143: Int64 = 143
    @Attribute var a144: Int64 = 144
    @Attribute var a145: Int64 = 145
    @Attribute var a146: Int64 = 146
    @Attribute var a147: Int64 = 147
    @Attribute var a148: Int64 = 148
    @Attribute var a149: Int64 = 149
    @Attribute(.indexed) var a150: Int64 = 150
    @Attribute var a151: Int64 = 151
    @Attribute var a152: Int64 = 152
    @Attribute var a153: Int64 = 153
    @Attribute var a154: Int64 = 154
    @Attribute var a155: Int64 = 155
    @Attribute var a156: Int64 = 156
    @Attribute(.indexed) var a157: Int64 = 157
    @Attribute var a158: Int64 = 158
    @Attribute var a159: Int64 = 159
    @Attribute var a160: Int64 = 160
    @Attribute var a161: Int64 = 161
    @Attribute var a162: Int64 = 162
    @Attribute var a163: Int64 = 163
    @Attribute(.indexed) var a164: Int64 = 164
    @Attribute var a165: Int64 = 165
    @Attribute var a166: Int64 = 166
    @Attribute var a167: Int64 = 167
    @Attribute var a168: Int64 = 168
    @Attribute var a169: Int64 = 169
    @Attribute var a170: Int64 = 170
    @Attribute(.indexed) var a171: Int64 = 171
    @Attribute var a172: Int64 = 172
    @Attribute var a173: Int64 = 173
    @Attribute var a174: Int64 = 174
    @Attribute var a175: Int64 = 175
    @Attribute var a176: Int64 = 176
    @Attribute var a177: Int64 = 177
    @Attribute(.indexed) var a178: Int64 = 178
    @Attribute var a179: Int64 = 179
    @Attribute var a180: Int64 = 180
    @Attribute var a181: Int64 = 181
    @Attribute var a182: Int64 = 182
    @Attribute var a183: Int64 = 183
    @Attribute var a184: Int64 = 184
    @Attribute(.indexed) var a185: Int64 = 185
    @Attribute var a186: Int64 = 186
    @Attribute var a187: Int64 = 187
    @Attribute var a188: Int64 = 188
    @Attribute var a189: Int64 = 189
    @Attribute var a190: Int64 = 190
    @Attribute var a191: Int64 = 191
    @Attribute(.indexed) var a192: Int64 = 192
    @Attribute var a193: Int64 = 193
    @Attribute var a194: Int64 = 194
    @Attribute var a195: Int64 = 195
    @Attribute var a196: Int64 = 196
    @Attribute var a197: Int64 = 197
    @Attribute var a198: Int64 = 198
    @Attribute(.indexed) var a199: Int64 = 199
    @Attribute var a200: Int64 = 200
    @Attribute var a201: Int64 = 201
    @Attribute var a202: Int64 = 202
    @Attribute var a203: Int64 = 203
    @Attribute var a204: Int64 = 204
    @Attribute var a205: Int64 = 205
    @Attribute(.indexed) var a206: Int64 = 206
    @Attribute var a207: Int64 = 207
    @Attribute var a208: Int64 = 208
    @Attribute var a209: Int64 = 209
    @Attribute var a210: Int64 = 210
    @Attribute var a211: Int64 = 211
    @Attribute var a212: Int64 = 212
    @Attribute(.indexed) var a213: Int64 = 213
    @Attribute var a214: Int64 = 214
    @Attribute var a215: Int64 = 215
    @Attribute var a216: Int64 = 216
    @Attribute var a217: Int64 = 217
    @Attribute var a218: Int64 = 218
    @Attribute var a219: Int64 = 219
    @Attribute(.indexed) var a220: Int64 = 220
    @Attribute var a221: Int64 = 221
    @Attribute var a222: Int64 = 222
    @Attribute var a223: Int64 = 223
    @Attribute var a224: Int64 = 224
    @Attribute var a225: Int64 = 225
    @Attribute var a226: Int64 = 226
    @Attribute(.indexed) var a227: Int64 = 227
    @Attribute var a228: Int64 = 228
    @Attribute var a229: Int64 = 229
    @Attribute var a230: Int64 = 230
    @Attribute var a231: Int64 = 231
    @Attribute var a232: Int64 = 232
    @Attribute var a233: Int64 = 233
    @Attribute(.indexed) var a234: Int64 = 234
    @Attribute var a235: Int64 = 235
    @Attribute var a236: Int64 = 236
    @Attribute var a237: Int64 = 237
    @Attribute var a238: Int64 = 238
    @Attribute var a239: Int64 = 239
    @Attribute var a240: Int64 = 240
    @Attribute(.indexed) var a241: Int64 = 241
    @Attribute var a242: Int64 = 242
    @Attribute var a243: Int64 = 243
    @Attribute var a244: Int64 = 244
    @Attribute var a245: Int64 = 245
    @Attribute var a246: Int64 = 246
    @Attribute var a247: Int64 = 247
    @Attribute(.indexed) var a248: Int64 = 248
    @Attribute var a249: Int64 = 249
    @Attribute var a250: Int64 = 250
    @Attribute var a251: Int64 = 251
    @Attribute var a252: Int64 = 252
    @Attribute var a253: Int64 = 253
    @Attribute var a254: Int64 = 254
    @Attribute(.indexed) var a255: Int64 = 255
    @Attribute var a256: Int64 = 256
    @Attribute var a257: Int64 = 257
    @Attribute var a258: Int64 = 258
    @Attribute var a259: Int64 = 259
    @Attribute var a260: Int64 = 260
    @Attribute var a261: Int64 = 261
    @Attribute(.indexed) var a262: Int64 = 262
    @Attribute var a263: Int64 = 263
    @Attribute var a264: Int64 = 264
    @Attribute var a265: Int64 = 265
    @Attribute var a266: Int64 = 266
    @Attribute var a267: Int64 = 267
    @Attribute var a268: Int64 = 268
    @Attribute(.indexed) var a269: Int64 = 269
    @Attribute var a270: Int64 = 270
    @Attribute var a271: Int64 = 271
    @Attribute var a272: Int64 = 272
    @Attribute var a273: Int64 = 273
    @Attribute var a274: Int64 = 274
    @Attribute var a275: Int64 = 275
    @Attribute(.indexed) var a276: Int64 = 276
    @Attribute var a277: Int64 = 277
    @Attribute var a278: Int64 = 278
    @Attribute var a279: Int64 = 279
    @Attribute var a280: Int64 = 280
    @Attribute var a281: Int64 = 281
    @Attribute var a282: Int64 = 282
    @Attribute(.indexed) var a283: Int64 = 283
    @Attribute var a284: Int64 = 284
    @Attribute var a285: Int64 = 285
    @Attribute var a286: Int64 = 286
    @Attribute var a287: Int64 = 287
    @Attribute var a288: Int64 = 288
    @Attribute var a289: Int64 = 289
    @Attribute(.indexed) var a290: Int64 = 290
    @Attribute var a291: Int64 = 291
    @Attribute var a292: Int64 = 292
    @Attribute var a293: Int64 = 293
    @Attribute var a294: Int64 = 294
    @Attribute var a295: Int64 = 295
    @Attribute var a296: Int64 = 296
    @Attribute(.indexed) var a297: Int64 = 297
    @Attribute var a298: Int64 = 298
    @Attribute var a299: Int64 = 299
    @Relationship(inverse: "late", deleteRule: .cascadeDeleteRule, maxCount: 5) var latePeers: Set<PDPeer>
}

final class PDPeer: NSManagedObject {
    @Attribute var name: String = "peer"
    @Relationship(inverse: "earlyPeer") var early: PDWide?
    @Relationship(inverse: "latePeers") var late: PDWide?
}

/// Required attributes whose class defaults differ from a hand-built model's.
final class PDDefaults: NSManagedObject {
    @Attribute var title: String = "untitled"
    @Attribute var count: Int64 = 42
    @Attribute var note: String?
}

/// A default evaluated at run time (`Date()`).
final class PDStamped: NSManagedObject {
    @Attribute var added: Date = Date()
}

/// Gives its second property the first one's wrapper.
final class PDCopied: NSManagedObject {
    @Attribute var a: Int64 = 1
    @Attribute var b: Int64 = 2
    required init(entity: NSEntityDescription, insertInto context: NSManagedObjectContext?) {
        super.init(entity: entity, insertInto: context)
        _b = _a
    }
}

/// An in-memory store whose primary keys start at 0.
final class PDFromZeroStore: ForwardingStore {
    let base: InMemoryStore
    init(model: NSManagedObjectModel) { base = InMemoryStore(model: model) }
    func allocatePrimaryKeys(entity: Int32, count: Int) throws -> ClosedRange<Int64> {
        let keys = try base.allocatePrimaryKeys(entity: entity, count: count)
        return (keys.lowerBound - 1)...(keys.upperBound - 1)
    }
}

/// More wrappers than one recording holds, and an initializer that makes ten more wrappers
/// the first time it runs only (a lazily built static): the passes would disagree.
final class PDWideLazy: NSManagedObject {
    @Attribute var w0: Int64 = 0
    @Attribute var w1: Int64 = 1
    @Attribute var w2: Int64 = 2
    @Attribute var w3: Int64 = 3
    @Attribute var w4: Int64 = 4
    @Attribute var w5: Int64 = 5
    @Attribute var w6: Int64 = 6
    @Attribute var w7: Int64 = 7
    @Attribute var w8: Int64 = 8
    @Attribute var w9: Int64 = 9
    @Attribute var w10: Int64 = 10
    @Attribute var w11: Int64 = 11
    @Attribute var w12: Int64 = 12
    @Attribute var w13: Int64 = 13
    @Attribute var w14: Int64 = 14
    @Attribute var w15: Int64 = 15
    @Attribute var w16: Int64 = 16
    @Attribute var w17: Int64 = 17
    @Attribute var w18: Int64 = 18
    @Attribute var w19: Int64 = 19
    @Attribute var w20: Int64 = 20
    @Attribute var w21: Int64 = 21
    @Attribute var w22: Int64 = 22
    @Attribute var w23: Int64 = 23
    @Attribute var w24: Int64 = 24
    @Attribute var w25: Int64 = 25
    @Attribute var w26: Int64 = 26
    @Attribute var w27: Int64 = 27
    @Attribute var w28: Int64 = 28
    @Attribute var w29: Int64 = 29
    @Attribute var w30: Int64 = 30
    @Attribute var w31: Int64 = 31
    @Attribute var w32: Int64 = 32
    @Attribute var w33: Int64 = 33
    @Attribute var w34: Int64 = 34
    @Attribute var w35: Int64 = 35
    @Attribute var w36: Int64 = 36
    @Attribute var w37: Int64 = 37
    @Attribute var w38: Int64 = 38
    @Attribute var w39: Int64 = 39
    @Attribute var w40: Int64 = 40
    @Attribute var w41: Int64 = 41
    @Attribute var w42: Int64 = 42
    @Attribute var w43: Int64 = 43
    @Attribute var w44: Int64 = 44
    @Attribute var w45: Int64 = 45
    @Attribute var w46: Int64 = 46
    @Attribute var w47: Int64 = 47
    @Attribute var w48: Int64 = 48
    @Attribute var w49: Int64 = 49
    @Attribute var w50: Int64 = 50
    @Attribute var w51: Int64 = 51
    @Attribute var w52: Int64 = 52
    @Attribute var w53: Int64 = 53
    @Attribute var w54: Int64 = 54
    @Attribute var w55: Int64 = 55
    @Attribute var w56: Int64 = 56
    @Attribute var w57: Int64 = 57
    @Attribute var w58: Int64 = 58
    @Attribute var w59: Int64 = 59
    @Attribute var w60: Int64 = 60
    @Attribute var w61: Int64 = 61
    @Attribute var w62: Int64 = 62
    @Attribute var w63: Int64 = 63
    @Attribute var w64: Int64 = 64
    @Attribute var w65: Int64 = 65
    @Attribute var w66: Int64 = 66
    @Attribute var w67: Int64 = 67
    @Attribute var w68: Int64 = 68
    @Attribute var w69: Int64 = 69
    @Attribute var w70: Int64 = 70
    @Attribute var w71: Int64 = 71
    @Attribute var w72: Int64 = 72
    @Attribute var w73: Int64 = 73
    @Attribute var w74: Int64 = 74
    @Attribute var w75: Int64 = 75
    @Attribute var w76: Int64 = 76
    @Attribute var w77: Int64 = 77
    @Attribute var w78: Int64 = 78
    @Attribute var w79: Int64 = 79
    @Attribute var w80: Int64 = 80
    @Attribute var w81: Int64 = 81
    @Attribute var w82: Int64 = 82
    @Attribute var w83: Int64 = 83
    @Attribute var w84: Int64 = 84
    @Attribute var w85: Int64 = 85
    @Attribute var w86: Int64 = 86
    @Attribute var w87: Int64 = 87
    @Attribute var w88: Int64 = 88
    @Attribute var w89: Int64 = 89
    @Attribute var w90: Int64 = 90
    @Attribute var w91: Int64 = 91
    @Attribute var w92: Int64 = 92
    @Attribute var w93: Int64 = 93
    @Attribute var w94: Int64 = 94
    @Attribute var w95: Int64 = 95
    @Attribute var w96: Int64 = 96
    @Attribute var w97: Int64 = 97
    @Attribute var w98: Int64 = 98
    @Attribute var w99: Int64 = 99
    @Attribute var w100: Int64 = 100
    @Attribute var w101: Int64 = 101
    @Attribute var w102: Int64 = 102
    @Attribute var w103: Int64 = 103
    @Attribute var w104: Int64 = 104
    @Attribute var w105: Int64 = 105
    @Attribute var w106: Int64 = 106
    @Attribute var w107: Int64 = 107
    @Attribute var w108: Int64 = 108
    @Attribute var w109: Int64 = 109
    @Attribute var w110: Int64 = 110
    @Attribute var w111: Int64 = 111
    @Attribute var w112: Int64 = 112
    @Attribute var w113: Int64 = 113
    @Attribute var w114: Int64 = 114
    @Attribute var w115: Int64 = 115
    @Attribute var w116: Int64 = 116
    @Attribute var w117: Int64 = 117
    @Attribute var w118: Int64 = 118
    @Attribute var w119: Int64 = 119
    @Attribute var w120: Int64 = 120
    @Attribute var w121: Int64 = 121
    @Attribute var w122: Int64 = 122
    @Attribute var w123: Int64 = 123
    @Attribute var w124: Int64 = 124
    @Attribute var w125: Int64 = 125
    @Attribute var w126: Int64 = 126
    @Attribute var w127: Int64 = 127
    @Attribute var w128: Int64 = 128
    @Attribute var w129: Int64 = 129
    @Attribute var w130: Int64 = 130
    @Attribute var w131: Int64 = 131
    @Attribute var w132: Int64 = 132
    @Attribute var w133: Int64 = 133
    @Attribute var w134: Int64 = 134
    @Attribute var w135: Int64 = 135
    @Attribute var w136: Int64 = 136
    @Attribute var w137: Int64 = 137
    @Attribute var w138: Int64 = 138
    @Attribute var w139: Int64 = 139
    @Attribute var w140: Int64 = 140
    @Attribute var w141: Int64 = 141
    @Attribute var w142: Int64 = 142
    @Attribute var w143: Int64 = 143
    @Attribute var w144: Int64 = 144
    @Attribute var w145: Int64 = 145
    @Attribute var w146: Int64 = 146
    @Attribute var w147: Int64 = 147
    @Attribute var w148: Int64 = 148
    @Attribute var w149: Int64 = 149
    @Attribute var w150: Int64 = 150
    @Attribute var w151: Int64 = 151
    @Attribute var w152: Int64 = 152
    @Attribute var w153: Int64 = 153
    @Attribute var w154: Int64 = 154
    @Attribute var w155: Int64 = 155
    @Attribute var w156: Int64 = 156
    @Attribute var w157: Int64 = 157
    @Attribute var w158: Int64 = 158
    @Attribute var w159: Int64 = 159
    @Attribute var w160: Int64 = 160
    @Attribute var w161: Int64 = 161
    @Attribute var w162: Int64 = 162
    @Attribute var w163: Int64 = 163
    @Attribute var w164: Int64 = 164
    @Attribute var w165: Int64 = 165
    @Attribute var w166: Int64 = 166
    @Attribute var w167: Int64 = 167
    @Attribute var w168: Int64 = 168
    @Attribute var w169: Int64 = 169
    @Attribute var w170: Int64 = 170
    @Attribute var w171: Int64 = 171
    @Attribute var w172: Int64 = 172
    @Attribute var w173: Int64 = 173
    @Attribute var w174: Int64 = 174
    @Attribute var w175: Int64 = 175
    @Attribute var w176: Int64 = 176
    @Attribute var w177: Int64 = 177
    @Attribute var w178: Int64 = 178
    @Attribute var w179: Int64 = 179
    @Attribute var w180: Int64 = 180
    @Attribute var w181: Int64 = 181
    @Attribute var w182: Int64 = 182
    @Attribute var w183: Int64 = 183
    @Attribute var w184: Int64 = 184
    @Attribute var w185: Int64 = 185
    @Attribute var w186: Int64 = 186
    @Attribute var w187: Int64 = 187
    @Attribute var w188: Int64 = 188
    @Attribute var w189: Int64 = 189
    @Attribute var w190: Int64 = 190
    @Attribute var w191: Int64 = 191
    @Attribute var w192: Int64 = 192
    @Attribute var w193: Int64 = 193
    @Attribute var w194: Int64 = 194
    @Attribute var w195: Int64 = 195
    @Attribute var w196: Int64 = 196
    @Attribute var w197: Int64 = 197
    @Attribute var w198: Int64 = 198
    @Attribute var w199: Int64 = 199
    @Attribute var w200: Int64 = 200
    @Attribute var w201: Int64 = 201
    @Attribute var w202: Int64 = 202
    @Attribute var w203: Int64 = 203
    @Attribute var w204: Int64 = 204
    @Attribute var w205: Int64 = 205
    @Attribute var w206: Int64 = 206
    @Attribute var w207: Int64 = 207
    @Attribute var w208: Int64 = 208
    @Attribute var w209: Int64 = 209
    @Attribute var w210: Int64 = 210
    @Attribute var w211: Int64 = 211
    @Attribute var w212: Int64 = 212
    @Attribute var w213: Int64 = 213
    @Attribute var w214: Int64 = 214
    @Attribute var w215: Int64 = 215
    @Attribute var w216: Int64 = 216
    @Attribute var w217: Int64 = 217
    @Attribute var w218: Int64 = 218
    @Attribute var w219: Int64 = 219
    @Attribute var w220: Int64 = 220
    @Attribute var w221: Int64 = 221
    @Attribute var w222: Int64 = 222
    @Attribute var w223: Int64 = 223
    @Attribute var w224: Int64 = 224
    @Attribute var w225: Int64 = 225
    @Attribute var w226: Int64 = 226
    @Attribute var w227: Int64 = 227
    @Attribute var w228: Int64 = 228
    @Attribute var w229: Int64 = 229
    @Attribute var w230: Int64 = 230
    @Attribute var w231: Int64 = 231
    @Attribute var w232: Int64 = 232
    @Attribute var w233: Int64 = 233
    @Attribute var w234: Int64 = 234
    @Attribute var w235: Int64 = 235
    @Attribute var w236: Int64 = 236
    @Attribute var w237: Int64 = 237
    @Attribute var w238: Int64 = 238
    @Attribute var w239: Int64 = 239
    @Attribute var w240: Int64 = 240
    @Attribute var w241: Int64 = 241
    @Attribute var w242: Int64 = 242
    @Attribute var w243: Int64 = 243
    @Attribute var w244: Int64 = 244
    @Attribute var w245: Int64 = 245
    @Attribute var w246: Int64 = 246
    @Attribute var w247: Int64 = 247
    @Attribute var w248: Int64 = 248
    @Attribute var w249: Int64 = 249
    @Attribute var w250: Int64 = 250
    @Attribute var w251: Int64 = 251
    @Attribute var w252: Int64 = 252
    @Attribute var w253: Int64 = 253
    @Attribute var w254: Int64 = 254
    @Attribute var w255: Int64 = 255
    @Attribute var w256: Int64 = 256
    @Attribute var w257: Int64 = 257
    @Attribute var w258: Int64 = 258
    @Attribute var w259: Int64 = 259
    required init(entity: NSEntityDescription, insertInto context: NSManagedObjectContext?) {
        _ = PDLazyWrappers.made.count
        super.init(entity: entity, insertInto: context)
    }
}

enum PDLazyWrappers {
    // nonisolated(unsafe): built once (a static's lazy initializer is thread-safe) and only
    // read afterwards; the wrappers are plain one-byte values.
    nonisolated(unsafe) static let made = (0..<10).map { Attribute<Int64>(wrappedValue: Int64($0)) }
}

private enum PDSupport {
    static func container(_ model: NSManagedObjectModel, name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let failure = TestMutex<(any Error)?>(nil)
        container.loadPersistentStores { _, error in failure.withLock { $0 = error } }
        if let error = failure.withLock({ $0 }) { throw error }
        return container
    }
}

@Suite("Property wrappers and the declarations they record") struct PropertyDeclarationTests {
    @Test func wrappersStoreOneByteInEachObject() {
        #expect(MemoryLayout<Attribute<String>>.size == 1)
        #expect(MemoryLayout<Attribute<Decimal?>>.size == 1)
        #expect(MemoryLayout<Relationship<Set<PDPeer>>>.size == 1)
        #expect(MemoryLayout<Relationship<PDPeer?>>.size == 1)
    }

    @Test @MainActor func aClassWithMoreWrappersThanOneRecordingHoldsGetsEveryDeclaration() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [PDWide.self, PDPeer.self])
        let wide = try #require(model.entitiesByName["PDWide"])
        #expect(wide.properties.count == 302)
        for i in 0..<300 {
            let a = try #require(wide.attributesByName["a\(i)"], "a\(i)")
            #expect(a.defaultValue as? Int64 == Int64(i), "a\(i)'s default")
            #expect(a.isIndexed == (i % 7 == 3), "a\(i)'s index flag")
        }
        let early = try #require(wide.relationshipsByName["earlyPeer"])
        #expect(early.inverseRelationship?.name == "early" && !early.isToMany)
        let late = try #require(wide.relationshipsByName["latePeers"])
        #expect(late.inverseRelationship?.name == "late" && late.isToMany)
        #expect(late.deleteRule == .cascadeDeleteRule && late.maxCount == 5)
        // Declaration order is kept across the windows.
        #expect(wide.properties.map(\.name).prefix(102).suffix(3) == ["a99", "earlyPeer", "a100"])

        // And the objects work: every slot resolves to its own property.
        let container = try PDSupport.container(model)
        let context = container.viewContext
        do {
            let o = PDWide(context: context)
            #expect(o.a0 == 0 && o.a253 == 253 && o.a254 == 254 && o.a299 == 299)
            o.a254 = -254
            o.a299 = -299
            let peer = PDPeer(context: context)
            o.earlyPeer = peer
            o.latePeers = [peer]
            try context.save()
            #expect(o.value(forKey: "a254") as? Int64 == -254 && o.value(forKey: "a299") as? Int64 == -299)
            #expect(peer.early === o && peer.late === o)
        }
    }

    @Test @MainActor func aRequiredAttributeHoldingNilReadsAsItsClassDefault() throws {
        let container = try PDSupport.container(try NSManagedObjectModel(managedObjectClasses: [PDDefaults.self]))
        let context = container.viewContext
        do {
            let o = PDDefaults(context: context)
            o.title = "set"
            o.count = 7
            o.setValue(nil, forKey: "title")
            o.setValue(nil, forKey: "count")
            #expect(o.title == "untitled")
            #expect(o.count == 42)
            #expect(o.note == nil)
        }
    }

    @Test @MainActor func withAHandBuiltModelANilReadGivesTheModelsDefault() throws {
        // The model says "model" and 1; the class declares "untitled" and 42. As in Core
        // Data, which has no class-level defaults, the model's default is the default; the
        // class is never instantiated to find its own (that would run its initializer with a
        // blank entity, which could trap).
        let entity = NSEntityDescription()
        entity.name = "PDDefaults"
        entity.managedObjectClass = PDDefaults.self
        let title = NSAttributeDescription()
        title.name = "title"
        title.attributeType = .stringAttributeType
        title.isOptional = false
        title.defaultValue = "model"
        let count = NSAttributeDescription()
        count.name = "count"
        count.attributeType = .integer64AttributeType
        count.isOptional = false
        count.defaultValue = Int64(1)
        let note = NSAttributeDescription()
        note.name = "note"
        note.attributeType = .stringAttributeType
        entity.properties = [title, count, note]
        let model = NSManagedObjectModel()
        model.entities = [entity]
        let container = try PDSupport.container(model)
        let context = container.viewContext
        do {
            let o = PDDefaults(context: context)
            #expect(o.title == "model" && o.count == 1)  // new objects start from the model's defaults
            o.title = "set"
            o.setValue(nil, forKey: "title")
            o.setValue(nil, forKey: "count")
            #expect(o.title == "model")
            #expect(o.count == 1)
        }
    }

    @Test @MainActor func aNilReadOfADefaultEvaluatedAtRunTimeGivesTheModelsValue() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [PDStamped.self])
        let modelDefault = try #require(model.entitiesByName["PDStamped"]?.attributesByName["added"]?.defaultValue as? Date)
        let container = try PDSupport.container(model)
        let context = container.viewContext
        let o = PDStamped(context: context)
        o.setValue(nil, forKey: "added")
        let first = o.added
        Thread.sleep(forTimeInterval: 0.01)
        #expect(first == modelDefault)
        #expect(o.added == first)
    }

    /// Primary key 0 is an ordinary key: `pendingRow` must not take 0 for "none", or a store
    /// handing out key 0 could not save.
    @Test func aStoreHandingOutPrimaryKeyZeroCanSave() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [PDDefaults.self])
        let store = PDFromZeroStore(model: model)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(store)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
        try context.performAndWait {
            let a = PDDefaults(context: context)
            a.title = "zero"
            let b = PDDefaults(context: context)
            b.title = "one"
            try context.save()
            #expect(a.objectID.uriRepresentation().lastPathComponent == "p0")
            #expect(b.objectID.uriRepresentation().lastPathComponent == "p1")
            context.reset()
            let titles = try context.fetch(PDDefaults.fetchRequest()).map(\.title).sorted()
            #expect(titles == ["one", "zero"])
        }
    }

    /// Wrappers made lazily during the first pass only would shift the later passes' windows
    /// and report a declared property as not declared; passes that disagree trap instead.
    @Test func passesThatRunDifferentInitializersTrap() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try? NSManagedObjectModel(managedObjectClasses: [PDWideLazy.self])
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("building PDWideLazy ran 270 property-wrapper initializers once and 260 the next time"), "\(stderr)")
    }

    /// One wrapper value given to two properties: their declarations cannot be told apart,
    /// and building the model says so instead of giving both the same declaration.
    @Test func aWrapperSharedByTwoPropertiesTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try? NSManagedObjectModel(managedObjectClasses: [PDCopied.self])
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("PDCopied.a and PDCopied.b carry the same wrapper"), "\(stderr)")
    }

    @Test func modelsBuiltOnManyThreadsWhileObjectsAreMadeGetTheirDeclarations() throws {
        let container = try PDSupport.container(try NSManagedObjectModel(managedObjectClasses: [PDDefaults.self]))
        let context = container.newBackgroundContext()
        let failures = TestMutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            if i % 2 == 0 {
                for _ in 0..<20 {
                    do {
                        let model = try NSManagedObjectModel(managedObjectClasses: [PDWide.self, PDPeer.self, PDDefaults.self])
                        let a = model.entitiesByName["PDWide"]?.attributesByName["a260"]
                        let t = model.entitiesByName["PDDefaults"]?.attributesByName["title"]
                        if a?.defaultValue as? Int64 != 260 || t?.defaultValue as? String != "untitled" {
                            failures.withLock { $0.append("model \(i): a260 \(String(describing: a?.defaultValue))") }
                        }
                    } catch {
                        failures.withLock { $0.append("model \(i): \(error)") }
                    }
                }
            } else {
                context.performAndWait {
                    for _ in 0..<200 {
                        let o = PDDefaults(context: context)
                        if o.title != "untitled" || o.count != 42 { failures.withLock { $0.append("object \(i)") } }
                    }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
    }
}
