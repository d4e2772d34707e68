/* json_num.c — JSON numbers: grammar check, classification, canonical text,
 * and the shortest round-trip formatting of doubles.
 *
 * The canonical text of a non-integer is the shortest decimal that reads
 * back to the same double, laid out as jiffy (double-conversion's
 * ToShortest with EMIT_TRAILING_DECIMAL_POINT, EMIT_TRAILING_ZERO_AFTER_POINT
 * and EMIT_POSITIVE_EXPONENT_SIGN, decimal notation for exponents -6..20)
 * lays it out — see json.h for the rules. Two paths compute it:
 *
 *  - Text path: a non-integer with at most 15 significant digits whose
 *    decimal exponent is within [-307, 307] is a normal double, and no other
 *    decimal of at most 15 digits reads back to the same double (DBL_DIG is
 *    15). So its shortest form is its own significant digits with the
 *    trailing zeros dropped, and no conversion is needed at all.
 *  - Binary path: anything else is converted with strtod (glibc's is
 *    correctly rounded) and printed with Ryu (Ulf Adams, "Ryū: fast
 *    float-to-string conversion", PLDI 2018), implemented here from the
 *    paper: exact, shortest, and among shortest candidates the nearest.
 *
 * Both paths give the same text for the same double, which is what makes
 * write -> parse -> write idempotent and JSON_NUM_DOUBLE a promise that the
 * storage layer can keep a double instead of the text.
 *
 * Not here: integer arithmetic on big integers (they stay text), and the
 * reader's own tokenizer (json_read.c scans numbers inline).
 *
 * The two tables below (5^q and 2^k/5^q, 125 significant bits each) were
 * generated with this Python, which states exactly what they hold:
 *
 *   for q in range(342): p = 5**q; INV[q] = (1 << (p.bit_length() + 124)) // p + 1
 *   for i in range(326): p = 5**i; s = p.bit_length() - 125
 *                        SPLIT[i] = p >> s if s >= 0 else p << -s
 *
 * stored as {low 64 bits, high 64 bits}.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "json/json_int.h"
#include "util/alloc.h"

#define POW5_INV_BITCOUNT 125
#define POW5_BITCOUNT 125
#define POW5_INV_TABLE_SIZE 342
#define POW5_TABLE_SIZE 326

static const uint64_t POW5_INV_SPLIT[POW5_INV_TABLE_SIZE][2] = {
    {0x0000000000000001ull, 0x2000000000000000ull}, {0x999999999999999aull, 0x1999999999999999ull},
    {0x47ae147ae147ae15ull, 0x147ae147ae147ae1ull}, {0x6c8b4395810624deull, 0x10624dd2f1a9fbe7ull},
    {0x7a786c226809d496ull, 0x1a36e2eb1c432ca5ull}, {0x61f9f01b866e43abull, 0x14f8b588e368f084ull},
    {0xb4c7f34938583622ull, 0x10c6f7a0b5ed8d36ull}, {0x87a6520ec08d236aull, 0x1ad7f29abcaf4857ull},
    {0x9fb841a566d74f88ull, 0x15798ee2308c39dfull}, {0xe62d01511f12a607ull, 0x112e0be826d694b2ull},
    {0xd6ae6881cb5109a4ull, 0x1b7cdfd9d7bdbab7ull}, {0xdef1ed34a2a73aeaull, 0x15fd7fe17964955full},
    {0x7f27f0f6e885c8bbull, 0x119799812dea1119ull}, {0x650cb4be40d60df8ull, 0x1c25c268497681c2ull},
    {0xea70909833de7193ull, 0x16849b86a12b9b01ull}, {0x21f3a6e0297ec143ull, 0x1203af9ee756159bull},
    {0x6985d7cd0f313537ull, 0x1cd2b297d889bc2bull}, {0x2137dfd73f5a90f9ull, 0x170ef54646d49689ull},
    {0xe75fe645cc4873faull, 0x12725dd1d243aba0ull}, {0xa5663d3c7a0d865dull, 0x1d83c94fb6d2ac34ull},
    {0x511e976394d79eb1ull, 0x179ca10c9242235dull}, {0xda7edf82dd794bc1ull, 0x12e3b40a0e9b4f7dull},
    {0x2a6498d1625bac68ull, 0x1e392010175ee596ull}, {0xeeb6e0a781e2f053ull, 0x182db34012b25144ull},
    {0x58924d52ce4f26a9ull, 0x1357c299a88ea76aull}, {0x27507bb7b07ea441ull, 0x1ef2d0f5da7dd8aaull},
    {0x52a6c95fc0655034ull, 0x18c240c4aecb13bbull}, {0x0eebd44c99eaa690ull, 0x13ce9a36f23c0fc9ull},
    {0xb17953adc3110a80ull, 0x1fb0f6be50601941ull}, {0xc12ddc8b02740867ull, 0x195a5efea6b34767ull},
    {0x3424b06f3529a052ull, 0x14484bfeebc29f86ull}, {0x901d59f290ee19dbull, 0x1039d66589687f9eull},
    {0x4cfbc31db4b0295full, 0x19f623d5a8a73297ull}, {0x3d9635b15d59bab2ull, 0x14c4e977ba1f5bacull},
    {0x97ab5e277de16228ull, 0x109d8792fb4c4956ull}, {0xf2abc9d8c9689d0dull, 0x1a95a5b7f87a0ef0ull},
    {0x5bbca17a3aba173eull, 0x154484932d2e725aull}, {0xafca1ac82efb45cbull, 0x11039d428a8b8eaeull},
    {0xb2dcf7a6b1920945ull, 0x1b38fb9daa78e44aull}, {0xf57d92ebc141a104ull, 0x15c72fb1552d836eull},
    {0xc46475896767b403ull, 0x116c262777579c58ull}, {0x6d6d88dbd8a5ecd2ull, 0x1be03d0bf225c6f4ull},
    {0x8abe071646eb23dbull, 0x164cfda3281e38c3ull}, {0x6efe6c11d255b649ull, 0x11d7314f534b609cull},
    {0xb197134fb6ef8a0eull, 0x1c8b821885456760ull}, {0x27ac0f72f8bfa1a5ull, 0x16d601ad376ab91aull},
    {0xb95672c260994e1eull, 0x1244ce242c5560e1ull}, {0xf5571e03cdc21695ull, 0x1d3ae36d13bbce35ull},
    {0x2aac18030b01ababull, 0x17624f8a762fd82bull}, {0xbbbce0026f348956ull, 0x12b50c6ec4f31355ull},
    {0x92c7ccd0b1eda889ull, 0x1dee7a4ad4b81eefull}, {0xdbd30a408e57ba07ull, 0x17f1fb6f10934bf2ull},
    {0x7ca8d50071dfc806ull, 0x1327fc58da0f6ff5ull}, {0xfaa7bb33e9660cd6ull, 0x1ea6608e29b24cbbull},
    {0x9552fc298784d711ull, 0x18851a0b548ea3c9ull}, {0xaaa8c9bad2d0ac0eull, 0x139dae6f76d88307ull},
    {0xdddadc5e1e1aace3ull, 0x1f62b0b257c0d1a5ull}, {0x7e48b04b4b488a4full, 0x191bc08eac9a4151ull},
    {0xcb6d59d5d5d3a1d9ull, 0x141633a556e1cddaull}, {0x3c577b1177dc817bull, 0x1011c2eaabe7d7e2ull},
    {0xc6f25e825960cf2aull, 0x19b604aaaca62636ull}, {0x6bf518684780a5bbull, 0x14919d5556eb51c5ull},
    {0x232a79ed06008496ull, 0x10747ddddf22a7d1ull}, {0xd1dd8fe1a3340756ull, 0x1a53fc9631d10c81ull},
    {0xa7e4731ae8f66c45ull, 0x150ffd44f4a73d34ull}, {0x531d28e253f8569eull, 0x10d9976a5d52975dull},
    {0xeb61db03b98d5762ull, 0x1af5bf109550f22eull}, {0xbc4e48cfc7a445e8ull, 0x159165a6ddda5b58ull},
    {0x6371d3d96c836b20ull, 0x11411e1f17e1e2adull}, {0x9f1c8628ad9f11cdull, 0x1b9b6364f3030448ull},
    {0xe5b06b53be18db0bull, 0x1615e91d8f359d06ull}, {0xeaf3890fcb4715a2ull, 0x11ab20e472914a6bull},
    {0x44b8db4c7871bc37ull, 0x1c45016d841baa46ull}, {0x03c715d6c6c1635full, 0x169d9abe03495505ull},
    {0x3638de456bcde919ull, 0x1217aefe69077737ull}, {0x56c163a2461641c1ull, 0x1cf2b1970e725858ull},
    {0xdf011c81d1ab67ceull, 0x17288e1271f51379ull}, {0x7f3416ce4155eca5ull, 0x1286d80ec190dc61ull},
    {0x6520247d3556476eull, 0x1da48ce468e7c702ull}, {0xea801d30f7783925ull, 0x17b6d71d20b96c01ull},
    {0xbb99b0f3f92cfa84ull, 0x12f8ac174d612334ull}, {0x5f5c4e532847f739ull, 0x1e5aacf215683854ull},
    {0x7f7d0b75b9d32c2eull, 0x18488a5b44536043ull}, {0x9930d5f7c7dc2358ull, 0x136d3b7c36a919cfull},
    {0x8eb4898c72f9d226ull, 0x1f152bf9f10e8fb2ull}, {0x722a07a38f2e41b8ull, 0x18ddbcc7f40ba628ull},
    {0xc1bb394fa5be9afaull, 0x13e497065cd61e86ull}, {0x9c5ec2190930f7f6ull, 0x1fd424d6faf030d7ull},
    {0x49e56814075a5ff8ull, 0x197683df2f268d79ull}, {0x6e51201005e1e660ull, 0x145ecfe5bf520ac7ull},
    {0xf1da800cd181851aull, 0x104bd984990e6f05ull}, {0x4fc400148268d4f5ull, 0x1a12f5a0f4e3e4d6ull},
    {0xd96999aa01ed772bull, 0x14dbf7b3f71cb711ull}, {0xadee1488018ac5bcull, 0x10aff95cc5b09274ull},
    {0x497ceda668de092cull, 0x1ab328946f80ea54ull}, {0x3aca57b853e4d424ull, 0x155c2076bf9a5510ull},
    {0x623b7960431d7683ull, 0x1116805effaeaa73ull}, {0x9d2bf566d1c8bd9eull, 0x1b5733cb32b110b8ull},
    {0x7dbcc452416d647full, 0x15df5ca28ef40d60ull}, {0xcafd69db678ab6ccull, 0x117f7d4ed8c33de6ull},
    {0xab2f0fc572778adfull, 0x1bff2ee48e052fd7ull}, {0x88f273045b92d580ull, 0x1665bf1d3e6a8cacull},
    {0xd3f528d049424466ull, 0x11eaff4a98553d56ull}, {0xb988414d4203a0a3ull, 0x1cab3210f3bb9557ull},
    {0x6139cdd76802e6e9ull, 0x16ef5b40c2fc7779ull}, {0xe761717920025254ull, 0x125915cd68c9f92dull},
    {0xa568b58e999d5086ull, 0x1d5b561574765b7cull}, {0x5120913ee14aa6d2ull, 0x177c44ddf6c515fdull},
    {0xa74d40ff1aa21f0eull, 0x12c9d0b1923744caull}, {0x0baece64f769cb4aull, 0x1e0fb44f50586e11ull},
    {0x3c8bd850c5ee3c3bull, 0x180c903f7379f1a7ull}, {0xca0979da37f1c9c9ull, 0x133d4032c2c7f485ull},
    {0xa9a8c2f6bfe942dbull, 0x1ec866b79e0cba6full}, {0x2153cf2bccba9be3ull, 0x18a0522c7e709526ull},
    {0x1aa9728970954982ull, 0x13b374f06526ddb8ull}, {0xf775840f1a88759dull, 0x1f8587e7083e2f8cull},
    {0x5f9136727ba05e17ull, 0x19379fec0698260aull}, {0x1940f85b9619e4dfull, 0x142c7ff0054684d5ull},
    {0xe100c6afab47ea4cull, 0x1023998cd1053710ull}, {0xce67a44c453fdd47ull, 0x19d28f47b4d524e7ull},
    {0xd852e9d69dccb106ull, 0x14a8729fc3ddb71full}, {0x79dbee454b0a2738ull, 0x1086c219697e2c19ull},
    {0x295fe3a211a9d859ull, 0x1a71368f0f30468full}, {0xbab31c81a7bb137aull, 0x15275ed8d8f36ba5ull},
    {0x6228e39aec95a92full, 0x10ec4be0ad8f8951ull}, {0x9d0e38f7e0ef7517ull, 0x1b13ac9aaf4c0ee8ull},
    {0xb0d82d931a592a79ull, 0x15a956e225d67253ull}, {0x8d79be0f4847552eull, 0x11544581b7dec1dcull},
    {0x158f967eda0bbb7cull, 0x1bba08cf8c979c94ull}, {0x77a611ff14d62f97ull, 0x162e6d72d6dfb076ull},
    {0xf951a7ff43de8c79ull, 0x11bebdf578b2f391ull}, {0xc21c3ffed2fdad8eull, 0x1c6463225ab7ec1cull},
    {0x01b0333242648ad8ull, 0x16b6b5b5155ff017ull}, {0x0159c28e9b83a246ull, 0x122bc490dde659acull},
    {0xcef604175f3903a3ull, 0x1d12d41afca3c2acull}, {0x725e69ac4c2d9c83ull, 0x17424348ca1c9bbdull},
    {0xf5185489d68ae39cull, 0x129b69070816e2fdull}, {0xee8d540fbdab05c6ull, 0x1dc574d80cf16b2full},
    {0xbed77672fe226b05ull, 0x17d12a4670c1228cull}, {0xff12c528cb4ebc04ull, 0x130dbb6b8d674ed6ull},
    {0xcb513b74787df9a0ull, 0x1e7c5f127bd87e24ull}, {0x090dc929f9fe614dull, 0x18637f41fcad31b7ull},
    {0xa0d7d42194cb810aull, 0x1382cc34ca2427c5ull}, {0x67bfb9cf5478ce77ull, 0x1f37ad21436d0c6full},
    {0x1fcc94a5dd2d71f9ull, 0x18f9574dcf8a7059ull}, {0x7fd6dd517dbdf4c7ull, 0x13faac3e3fa1f37aull},
    {0xffbe2ee8c92fee0bull, 0x1ff779fd329cb8c3ull}, {0x6631bf20a0f324d6ull, 0x1992c7fdc216fa36ull},
    {0xb827cc1a1a5c1d78ull, 0x14756ccb01abfb5eull}, {0x935309ae7b7ce460ull, 0x105df0a267bcc918ull},
    {0x1eeb42b0c594a099ull, 0x1a2fe76a3f9474f4ull}, {0xe58902270476e6e1ull, 0x14f31f8832dd2a5cull},
    {0xb7a0ce859d2bebe7ull, 0x10c27fa028b0eeb0ull}, {0x59014a6f61dfdfd8ull, 0x1ad0cc33744e4ab4ull},
    {0xe0cdd525e7e64cadull, 0x1573d68f903ea229ull}, {0x4d7177518651d6f1ull, 0x11297872d9cbb4eeull},
    {0x7be8bee8d6e957e8ull, 0x1b758d848fac54b0ull}, {0xfcba3253df211320ull, 0x15f7a46a0c89dd59ull},
    {0x63c8284318e74280ull, 0x1192e9ee706e4aaeull}, {0x060d0d3827d86a66ull, 0x1c1e43171a4a1117ull},
    {0x6b3da42cecad21ebull, 0x167e9c127b6e7412ull}, {0x88fe1cf0bd574e56ull, 0x11fee341fc585cdbull},
    {0x419694b462254a23ull, 0x1ccb0536608d615full}, {0x67abaa29e81dd4e9ull, 0x1708d0f84d3de77full},
    {0xb95621bb2017dd87ull, 0x126d73f9d764b932ull}, {0xc223692b668c95a5ull, 0x1d7becc2f23ac1eaull},
    {0xce82ba891ed6de1dull, 0x179657025b6234bbull}, {0xa53562074bdf1818ull, 0x12deac01e2b4f6fcull},
    {0x3b889cd87964f359ull, 0x1e3113363787f194ull}, {0xfc6d4a46c783f5e1ull, 0x18274291c6065adcull},
    {0x30576e9f06032b1aull, 0x13529ba7d19eaf17ull}, {0x1a257dcb3cd1de90ull, 0x1eea92a61c311825ull},
    {0x481dfe3c30a7e540ull, 0x18bba884e35a79b7ull}, {0xd34b31c9c0865100ull, 0x13c9539d82aec7c5ull},
    {0x5211e942cda3b4cdull, 0x1fa885c8d117a609ull}, {0x74db21023e1c90a4ull, 0x19539e3a40dfb807ull},
    {0xf715b401cb4a0d50ull, 0x1442e4fb67196005ull}, {0xf8de299b09080aa7ull, 0x103583fc527ab337ull},
    {0x8e304291a80cddd7ull, 0x19ef3993b72ab859ull}, {0x3e8d020e200a4b13ull, 0x14bf6142f8eef9e1ull},
    {0x653d9b3e80083c0full, 0x10991a9bfa58c7e7ull}, {0x6ec8f864000d2ce4ull, 0x1a8e90f9908e0ca5ull},
    {0x8bd3f9e999a423eaull, 0x153eda614071a3b7ull}, {0x3ca994bae1501cbbull, 0x10ff151a99f482f9ull},
    {0xc775bac49bb3612bull, 0x1b31bb5dc320d18eull}, {0xd2c4956a16291a89ull, 0x15c162b168e70e0bull},
    {0xdbd0778811ba7ba1ull, 0x11678227871f3e6full}, {0x2c80bf401c5d929bull, 0x1bd8d03f3e9863e6ull},
    {0xbd33cc3349e47549ull, 0x16470cff6546b651ull}, {0xca8fd68f6e505dd4ull, 0x11d270cc51055ea7ull},
    {0x4419574be3b3c953ull, 0x1c83e7ad4e6efdd9ull}, {0x0347790982f63aa9ull, 0x16cfec8aa52597e1ull},
    {0xcf6c60d468c4fbbaull, 0x123ff06eea847980ull}, {0xe57a34870e07f92aull, 0x1d331a4b10d3f59aull},
    {0x512e906c0b399422ull, 0x175c1508da432ae2ull}, {0xda8ba6bcd5c7a9b5ull, 0x12b010d3e1cf5581ull},
    {0x90df712e22d90f87ull, 0x1de6815302e5559cull}, {0xda4c5a8b4f140c6cull, 0x17eb9aa8cf1dde16ull},
    {0xaea37ba2a5a9a38aull, 0x1322e220a5b17e78ull}, {0x7dd25f6aa2a905a9ull, 0x1e9e369aa2b59727ull},
    {0x97db7f888220d154ull, 0x187e92154ef7ac1full}, {0x797c6606ce80a777ull, 0x139874ddd8c6234cull},
    {0x8f2d700ae4010bf1ull, 0x1f5a549627a36badull}, {0x0c2459a25000d65aull, 0x191510781fb5efbeull},
    {0x701d1481d99a4515ull, 0x1410d9f9b2f7f2feull}, {0xc017439b147b6a77ull, 0x100d7b2e28c65bfeull},
    {0xccf205c4ed9243f2ull, 0x19af2b7d0e0a2ccaull}, {0x0a5b37d0be0e9cc2ull, 0x148c22ca71a1bd6full},
    {0x0848f973cb3ee3ceull, 0x10701bd527b4978cull}, {0xda0e5bec78649fb0ull, 0x1a4cf9550c5425acull},
    {0x7b3eaff060507fc0ull, 0x150a6110d6a9b7bdull}, {0x95cbbff380406633ull, 0x10d51a73deee2c97ull},
    {0xefac665266cd7052ull, 0x1aee90b964b04758ull}, {0x2623850eb8a459dbull, 0x158ba6fab6f36c47ull},
    {0x1e82d0d893b6ae49ull, 0x113c85955f29236cull}, {0xfd9e1af41f8ab075ull, 0x1b9408eefea838acull},
    {0x97b1af29b2d559f7ull, 0x16100725988693bdull}, {0xac8e25baf5777b2cull, 0x11a66c1e139edc97ull},
    {0x7a7d092b2258c513ull, 0x1c3d79c9b8fe2dbfull}, {0x61fda0ef4ead6a76ull, 0x169794a160cb57ccull},
    {0xe7fe1a590bbdeec5ull, 0x1212dd4de7091309ull}, {0xa6635d5b45fcb13aull, 0x1ceafbafd80e84dcull},
    {0x851c4aaf6b308dc8ull, 0x172262f3133ed0b0ull}, {0xd0e36ef2bc26d7d4ull, 0x1281e8c275cbda26ull},
    {0xb49f17eac6a48c86ull, 0x1d9ca79d894629d7ull}, {0x2a18dfef0550706bull, 0x17b08617a104ee46ull},
    {0x54e0b3259dd9f389ull, 0x12f39e794d9d8b6bull}, {0x87cdeb6f62f65274ull, 0x1e5297287c2f4578ull},
    {0xd30b22bf825ea85dull, 0x18421286c9bf6ac6ull}, {0x0f3c1bcc684bb9e4ull, 0x13680ed23aff889full},
    {0x18602c7a4079296dull, 0x1f0ce4839198da98ull}, {0x46b356c833942124ull, 0x18d71d360e13e213ull},
    {0x388f78a029434db6ull, 0x13df4a91a4dcb4dcull}, {0x5a7f2766a86baf8aull, 0x1fcbaa82a1612160ull},
    {0x153285ebb9efbfa2ull, 0x196fbb9bb44db44dull}, {0xaa8ed189618c994eull, 0x145962e2f6a4903dull},
    {0xeed8a7a11ad6e10cull, 0x1047824f2bb6d9caull}, {0x7e27729b5e249b45ull, 0x1a0c03b1df8af611ull},
    {0xfe85f549181d4904ull, 0x14d6695b193bf80dull}, {0xcb9e5dd4134aa0d0ull, 0x10ab877c142ff9a4ull},
    {0xdf63c9535211014dull, 0x1aac0bf9b9e65c3aull}, {0x191ca10f74da6771ull, 0x15566ffafb1eb02full},
    {0xadb080d92a4852c1ull, 0x1111f32f2f4bc025ull}, {0x15e7348eaa0d5134ull, 0x1b4feb7eb212cd09ull},
    {0xab1f5d3eee710dc4ull, 0x15d98932280f0a6dull}, {0xbc1917658b8da49dull, 0x117ad428200c0857ull},
    {0x2cf4f23c127c3a94ull, 0x1bf7b9d9cce00d59ull}, {0xf0c3f4fcdb969543ull, 0x165fc7e170b33de0ull},
    {0x5a365d9716121103ull, 0x11e6398126f5cb1aull}, {0x9056fc24f01ce804ull, 0x1ca38f350b22de90ull},
    {0xd9df301d8ce3ecd0ull, 0x16e93f5da2824ba6ull}, {0xe17f59b13d8323daull, 0x125432b14ecea2ebull},
    {0x68cbc2b52f38395cull, 0x1d53844ee47dd179ull}, {0x53d6355dbf602de3ull, 0x177603725064a794ull},
    {0xa9782ab165e68b1cull, 0x12c4cf8ea6b6ec76ull}, {0x0f26aab56fd744faull, 0x1e07b27dd78b13f1ull},
    {0x3f52222abfdf6a62ull, 0x18062864ac6f4327ull}, {0x65db4e88997f884eull, 0x1338205089f29c1full},
    {0x6fc54a7428cc0d4aull, 0x1ec033b40fea9365ull}, {0x596aa1f68709a43bull, 0x1899c2f673220f84ull},
    {0xadeee7f86c07b696ull, 0x13ae3591f5b4d936ull}, {0x497e3ff3e00c5756ull, 0x1f7d228322baf524ull},
    {0xd464fff64cd6ac45ull, 0x1930e868e89590e9ull}, {0x4383fff83d7889d1ull, 0x14272053ed4473eeull},
    {0xcf9cccc69793a174ull, 0x101f4d0ff1038ff1ull}, {0x7f6147a425b90252ull, 0x19cbae7fe805b31cull},
    {0xcc4dd2e9b7c7350full, 0x14a2f1ffecd15c16ull}, {0x3d0b0f215fd290d9ull, 0x10825b3323dab012ull},
    {0x61ab4b689950e7c1ull, 0x1a6a2b85062ab350ull}, {0x4e22a2ba1440b967ull, 0x1521bc6a6b555c40ull},
    {0x0b4ee894dd009453ull, 0x10e7c9eebc4449cdull}, {0x1217da87c800ed51ull, 0x1b0c764ac6d3a948ull},
    {0xdb46486ca000bddaull, 0x15a391d56bdc876cull}, {0x490506bd4ccd64afull, 0x114fa7ddefe39f8aull},
    {0xa8080ac87ae23ab1ull, 0x1bb2a62fe638ff43ull}, {0x5339a239fbe82ef4ull, 0x162884f31e93ff69ull},
    {0x75c7b4fb2fecf25dull, 0x11ba03f5b20fff87ull}, {0x22d92191e647ea2eull, 0x1c5cd322b67fff3full},
    {0xb57a8141850654f2ull, 0x16b0a8e891ffff65ull}, {0xc4620101373843f5ull, 0x1226ed86db3332b7ull},
    {0x3a366801f1f39feeull, 0x1d0b15a491eb8459ull}, {0xfb5eb99b27f6198bull, 0x173c115074bc69e0ull},
    {0x2f7efae2865e7ad6ull, 0x129674405d6387e7ull}, {0xe597f7d0d6fd9156ull, 0x1dbd86cd6238d971ull},
    {0x8479930d78cadaabull, 0x17cad23de82d7ac1ull}, {0xd06142712d6f1556ull, 0x1308a831868ac89aull},
    {0x4d686a4eaf182222ull, 0x1e74404f3daada91ull}, {0xa453883ef279b4e8ull, 0x185d003f6488aedaull},
    {0xe9dc6cff28615d87ull, 0x137d99cc506d58aeull}, {0xa960ae650d6895a4ull, 0x1f2f5c7a1a488de4ull},
    {0xbab3beb73ded4483ull, 0x18f2b061aea07183ull}, {0x2ef6322c318a9d36ull, 0x13f559e7bee6c136ull},
    {0xe4bd1d13827761f0ull, 0x1feef63f97d79b89ull}, {0x83ca7da9352c4e5aull, 0x198bf832dfdfafa1ull},
    {0x9ca1fe20f756a515ull, 0x146ff9c24cb2f2e7ull}, {0x4a1b31b3f9121daaull, 0x1059949b708f28b9ull},
    {0x435eb5ecc1b695ddull, 0x1a28edc580e50df5ull}, {0x35e55e57015ede4aull, 0x14ed8b04671da4c4ull},
    {0xc4b77eac0118b1d5ull, 0x10be08d0527e1d69ull}, {0xa12597799b5ab622ull, 0x1ac9a7b3b7302f0full},
    {0x4db7ac6149155e81ull, 0x156e1fc2f8f358d9ull}, {0xd7c6238107444b9bull, 0x1124e63593f5e0adull},
    {0x593d059b3ed3ac2bull, 0x1b6e3d2286563449ull}, {0xe0fd9e15cbdc89bcull, 0x15f1ca820511c36dull},
    {0xb3fe18116fe3a163ull, 0x118e3b9b37416924ull}, {0x866359b57fd29bd1ull, 0x1c16c5c525357507ull},
    {0xd1e91491330ee30eull, 0x16789e3750f790d2ull}, {0x74ba76da8f3f1c0bull, 0x11fa182c40c60d75ull},
    {0xedf72490e531c678ull, 0x1cc359e067a348bbull}, {0x8b2c1d40b75b052dull, 0x1702ae4d1fb5d3c9ull},
    {0x6f567dcd5f7c0424ull, 0x12688b70e62b0fd4ull}, {0x7ef0c94898c66d06ull, 0x1d74124e3d11b2edull},
    {0x98c0a106e09ebd9full, 0x17900ea4fda7c257ull}, {0x470080d24d4bcae6ull, 0x12d9a550caec9b79ull},
    {0xd800ce1d487944a2ull, 0x1e29088144adc58eull}, {0x1333d8176d2dd082ull, 0x1820d39a9d57d13full},
    {0xa8f646792424a6ceull, 0x134d76154aaca765ull}, {0x74bd3d8ea03aa47dull, 0x1ee25688777aa56full},
    {0x5d64313ee6955064ull, 0x18b51206c5fbb78cull}, {0x4ab68dcbebaaa6b7ull, 0x13c40e6bd1962c70ull},
    {0x1124161312aaa457ull, 0x1fa01712e8f0471aull}, {0xda8344dc0eeee9dfull, 0x194cdf4253f36c14ull},
    {0xe2029d7cd8bf2180ull, 0x143d7f6843292343ull}, {0x4e687dfd7a328133ull, 0x103132b9cf541c36ull},
    {0x4a40c9959050ceb8ull, 0x19e851294bb9c6bdull}, {0x0833d477a6a70bc6ull, 0x14b9da876fc7d231ull},
    {0xa02976c61eec096bull, 0x1094aed2bfd30e8dull}, {0x004257a364acdbdfull, 0x1a877e1dffb81749ull},
    {0xcd01dfb5ea23e319ull, 0x153931b1996012a0ull}, {0x70ce4c91881cb5aeull, 0x10fa8e27ade6754dull},
    {0x1ae3adb5a69455e2ull, 0x1b2a7d0c4970bbafull}, {0x7be957c4854377e8ull, 0x15bb973d078d62f2ull},
    {0xc987796a0435f987ull, 0x1162df64060ab58eull}, {0x75a58f1006bcc271ull, 0x1bd1656cd67788e4ull},
    {0xf7b7a5a66bca3527ull, 0x16411df0ab92d3e9ull}, {0x5fc61e1ebca1c41full, 0x11cdb18d560f0feeull},
    {0xffa363646102d365ull, 0x1c7c4f4889b1b316ull}, {0x32e91c504d9bdc51ull, 0x16c9d906d48e28dfull},
    {0x8f20e37371497d0eull, 0x123b140576d820b2ull}, {0x7e9b0585820f2e7cull, 0x1d2b533bf159cdeaull},
    {0xcbaf379e01a5becaull, 0x1755dc2ff447d7eeull}, {0x0958f94b348498a1ull, 0x12ab168cc36cacbfull},
};
static const uint64_t POW5_SPLIT[POW5_TABLE_SIZE][2] = {
    {0x0000000000000000ull, 0x1000000000000000ull}, {0x0000000000000000ull, 0x1400000000000000ull},
    {0x0000000000000000ull, 0x1900000000000000ull}, {0x0000000000000000ull, 0x1f40000000000000ull},
    {0x0000000000000000ull, 0x1388000000000000ull}, {0x0000000000000000ull, 0x186a000000000000ull},
    {0x0000000000000000ull, 0x1e84800000000000ull}, {0x0000000000000000ull, 0x1312d00000000000ull},
    {0x0000000000000000ull, 0x17d7840000000000ull}, {0x0000000000000000ull, 0x1dcd650000000000ull},
    {0x0000000000000000ull, 0x12a05f2000000000ull}, {0x0000000000000000ull, 0x174876e800000000ull},
    {0x0000000000000000ull, 0x1d1a94a200000000ull}, {0x0000000000000000ull, 0x12309ce540000000ull},
    {0x0000000000000000ull, 0x16bcc41e90000000ull}, {0x0000000000000000ull, 0x1c6bf52634000000ull},
    {0x0000000000000000ull, 0x11c37937e0800000ull}, {0x0000000000000000ull, 0x16345785d8a00000ull},
    {0x0000000000000000ull, 0x1bc16d674ec80000ull}, {0x0000000000000000ull, 0x1158e460913d0000ull},
    {0x0000000000000000ull, 0x15af1d78b58c4000ull}, {0x0000000000000000ull, 0x1b1ae4d6e2ef5000ull},
    {0x0000000000000000ull, 0x10f0cf064dd59200ull}, {0x0000000000000000ull, 0x152d02c7e14af680ull},
    {0x0000000000000000ull, 0x1a784379d99db420ull}, {0x0000000000000000ull, 0x108b2a2c28029094ull},
    {0x0000000000000000ull, 0x14adf4b7320334b9ull}, {0x4000000000000000ull, 0x19d971e4fe8401e7ull},
    {0x8800000000000000ull, 0x1027e72f1f128130ull}, {0xaa00000000000000ull, 0x1431e0fae6d7217cull},
    {0xd480000000000000ull, 0x193e5939a08ce9dbull}, {0xc9a0000000000000ull, 0x1f8def8808b02452ull},
    {0xbe04000000000000ull, 0x13b8b5b5056e16b3ull}, {0xad85000000000000ull, 0x18a6e32246c99c60ull},
    {0xd8e6400000000000ull, 0x1ed09bead87c0378ull}, {0x878fe80000000000ull, 0x13426172c74d822bull},
    {0x6973e20000000000ull, 0x1812f9cf7920e2b6ull}, {0x03d0da8000000000ull, 0x1e17b84357691b64ull},
    {0x8262889000000000ull, 0x12ced32a16a1b11eull}, {0x22fb2ab400000000ull, 0x178287f49c4a1d66ull},
    {0xabb9f56100000000ull, 0x1d6329f1c35ca4bfull}, {0xcb54395ca0000000ull, 0x125dfa371a19e6f7ull},
    {0xbe2947b3c8000000ull, 0x16f578c4e0a060b5ull}, {0x2db399a0ba000000ull, 0x1cb2d6f618c878e3ull},
    {0xfc90400474400000ull, 0x11efc659cf7d4b8dull}, {0x7bb4500591500000ull, 0x166bb7f0435c9e71ull},
    {0xdaa16406f5a40000ull, 0x1c06a5ec5433c60dull}, {0xa8a4de8459868000ull, 0x118427b3b4a05bc8ull},
    {0xd2ce16256fe82000ull, 0x15e531a0a1c872baull}, {0x87819baecbe22800ull, 0x1b5e7e08ca3a8f69ull},
    {0xf4b1014d3f6d5900ull, 0x111b0ec57e6499a1ull}, {0x71dd41a08f48af40ull, 0x1561d276ddfdc00aull},
    {0x0e549208b31adb10ull, 0x1aba4714957d300dull}, {0x28f4db456ff0c8eaull, 0x10b46c6cdd6e3e08ull},
    {0x33321216cbecfb24ull, 0x14e1878814c9cd8aull}, {0xbffe969c7ee839edull, 0x1a19e96a19fc40ecull},
    {0xf7ff1e21cf512434ull, 0x105031e2503da893ull}, {0xf5fee5aa43256d41ull, 0x14643e5ae44d12b8ull},
    {0x337e9f14d3eec892ull, 0x197d4df19d605767ull}, {0x005e46da08ea7ab6ull, 0x1fdca16e04b86d41ull},
    {0xa03aec4845928cb2ull, 0x13e9e4e4c2f34448ull}, {0xc849a75a56f72fdeull, 0x18e45e1df3b0155aull},
    {0x7a5c1130ecb4fbd6ull, 0x1f1d75a5709c1ab1ull}, {0xec798abe93f11d65ull, 0x13726987666190aeull},
    {0xa797ed6e38ed64bfull, 0x184f03e93ff9f4daull}, {0x517de8c9c728bdefull, 0x1e62c4e38ff87211ull},
    {0xd2eeb17e1c7976b5ull, 0x12fdbb0e39fb474aull}, {0x87aa5ddda397d462ull, 0x17bd29d1c87a191dull},
    {0xe994f5550c7dc97bull, 0x1dac74463a989f64ull}, {0x11fd195527ce9dedull, 0x128bc8abe49f639full},
    {0xd67c5faa71c24568ull, 0x172ebad6ddc73c86ull}, {0x8c1b77950e32d6c2ull, 0x1cfa698c95390ba8ull},
    {0x57912abd28dfc639ull, 0x121c81f7dd43a749ull}, {0xad75756c7317b7c8ull, 0x16a3a275d494911bull},
    {0x98d2d2c78fdda5baull, 0x1c4c8b1349b9b562ull}, {0x9f83c3bcb9ea8794ull, 0x11afd6ec0e14115dull},
    {0x0764b4abe8652979ull, 0x161bcca7119915b5ull}, {0x493de1d6e27e73d7ull, 0x1ba2bfd0d5ff5b22ull},
    {0x6dc6ad264d8f0866ull, 0x1145b7e285bf98f5ull}, {0xc938586fe0f2ca80ull, 0x159725db272f7f32ull},
    {0x7b866e8bd92f7d20ull, 0x1afcef51f0fb5effull}, {0xad34051767bdae34ull, 0x10de1593369d1b5full},
    {0x9881065d41ad19c1ull, 0x15159af804446237ull}, {0x7ea147f492186032ull, 0x1a5b01b605557ac5ull},
    {0x6f24ccf8db4f3c1full, 0x1078e111c3556cbbull}, {0x4aee003712230b27ull, 0x14971956342ac7eaull},
    {0xdda98044d6abcdf0ull, 0x19bcdfabc13579e4ull}, {0x0a89f02b062b60b6ull, 0x10160bcb58c16c2full},
    {0xcd2c6c35c7b638e4ull, 0x141b8ebe2ef1c73aull}, {0x8077874339a3c71dull, 0x1922726dbaae3909ull},
    {0xe0956914080cb8e4ull, 0x1f6b0f092959c74bull}, {0x6c5d61ac8507f38eull, 0x13a2e965b9d81c8full},
    {0x4774ba17a649f072ull, 0x188ba3bf284e23b3ull}, {0x1951e89d8fdc6c8full, 0x1eae8caef261aca0ull},
    {0x0fd3316279e9c3d9ull, 0x132d17ed577d0be4ull}, {0x13c7fdbb186434cfull, 0x17f85de8ad5c4eddull},
    {0x58b9fd29de7d4203ull, 0x1df67562d8b36294ull}, {0xb7743e3a2b0e4942ull, 0x12ba095dc7701d9cull},
    {0xe5514dc8b5d1db92ull, 0x17688bb5394c2503ull}, {0xdea5a13ae3465277ull, 0x1d42aea2879f2e44ull},
    {0x0b2784c4ce0bf38aull, 0x1249ad2594c37cebull}, {0xcdf165f6018ef06dull, 0x16dc186ef9f45c25ull},
    {0x416dbf7381f2ac88ull, 0x1c931e8ab871732full}, {0x88e497a83137abd5ull, 0x11dbf316b346e7fdull},
    {0xeb1dbd923d8596caull, 0x1652efdc6018a1fcull}, {0x25e52cf6cce6fc7dull, 0x1be7abd3781eca7cull},
    {0x97af3c1a40105dceull, 0x1170cb642b133e8dull}, {0xfd9b0b20d0147542ull, 0x15ccfe3d35d80e30ull},
    {0x3d01cde904199292ull, 0x1b403dcc834e11bdull}, {0x462120b1a28ffb9bull, 0x1108269fd210cb16ull},
    {0xd7a968de0b33fa82ull, 0x154a3047c694fddbull}, {0xcd93c3158e00f923ull, 0x1a9cbc59b83a3d52ull},
    {0xc07c59ed78c09bb6ull, 0x10a1f5b813246653ull}, {0xb09b7068d6f0c2a3ull, 0x14ca732617ed7fe8ull},
    {0xdcc24c830cacf34cull, 0x19fd0fef9de8dfe2ull}, {0xc9f96fd1e7ec180full, 0x103e29f5c2b18bedull},
    {0x3c77cbc661e71e13ull, 0x144db473335deee9ull}, {0x8b95beb7fa60e598ull, 0x1961219000356aa3ull},
    {0x6e7b2e65f8f91efeull, 0x1fb969f40042c54cull}, {0xc50cfcffbb9bb35full, 0x13d3e2388029bb4full},
    {0xb6503c3faa82a037ull, 0x18c8dac6a0342a23ull}, {0xa3e44b4f95234844ull, 0x1efb1178484134acull},
    {0xe66eaf11bd360d2bull, 0x135ceaeb2d28c0ebull}, {0xe00a5ad62c839075ull, 0x183425a5f872f126ull},
    {0x980cf18bb7a47493ull, 0x1e412f0f768fad70ull}, {0x5f0816f752c6c8dcull, 0x12e8bd69aa19cc66ull},
    {0xf6ca1cb527787b13ull, 0x17a2ecc414a03f7full}, {0xf47ca3e2715699d7ull, 0x1d8ba7f519c84f5full},
    {0xf8cde66d86d62026ull, 0x127748f9301d319bull}, {0xf7016008e88ba830ull, 0x17151b377c247e02ull},
    {0xb4c1b80b22ae923cull, 0x1cda62055b2d9d83ull}, {0x50f91306f5ad1b65ull, 0x12087d4358fc8272ull},
    {0xe53757c8b318623full, 0x168a9c942f3ba30eull}, {0x9e852dbadfde7acfull, 0x1c2d43b93b0a8bd2ull},
    {0xa3133c94cbeb0cc1ull, 0x119c4a53c4e69763ull}, {0x8bd80bb9fee5cff1ull, 0x16035ce8b6203d3cull},
    {0xaece0ea87e9f43eeull, 0x1b843422e3a84c8bull}, {0x4d40c9294f238a75ull, 0x1132a095ce492fd7ull},
    {0x2090fb73a2ec6d12ull, 0x157f48bb41db7bcdull}, {0x68b53a508ba78856ull, 0x1adf1aea12525ac0ull},
    {0x417144725748b536ull, 0x10cb70d24b7378b8ull}, {0x51cd958eed1ae283ull, 0x14fe4d06de5056e6ull},
    {0xe640faf2a8619b24ull, 0x1a3de04895e46c9full}, {0xefe89cd7a93d00f7ull, 0x1066ac2d5daec3e3ull},
    {0xebe2c40d938c4134ull, 0x14805738b51a74dcull}, {0x26db7510f86f5181ull, 0x19a06d06e2611214ull},
    {0x9849292a9b4592f1ull, 0x100444244d7cab4cull}, {0xbe5b73754216f7adull, 0x1405552d60dbd61full},
    {0xadf25052929cb598ull, 0x1906aa78b912cba7ull}, {0x996ee4673743e2ffull, 0x1f485516e7577e91ull},
    {0xffe54ec0828a6ddfull, 0x138d352e5096af1aull}, {0xbfdea270a32d0957ull, 0x18708279e4bc5ae1ull},
    {0x2fd64b0ccbf84badull, 0x1e8ca3185deb719aull}, {0x5de5eee7ff7b2f4cull, 0x1317e5ef3ab32700ull},
    {0x755f6aa1ff59fb1full, 0x17dddf6b095ff0c0ull}, {0x92b7454a7f3079e7ull, 0x1dd55745cbb7ecf0ull},
    {0x5bb28b4e8f7e4c30ull, 0x12a5568b9f52f416ull}, {0xf29f2e22335ddf3cull, 0x174eac2e8727b11bull},
    {0xef46f9aac035570bull, 0x1d22573a28f19d62ull}, {0xd58c5c0ab8215667ull, 0x123576845997025dull},
    {0x4aef730d6629ac01ull, 0x16c2d4256ffcc2f5ull}, {0x9dab4fd0bfb41701ull, 0x1c73892ecbfbf3b2ull},
    {0xa28b11e277d08e60ull, 0x11c835bd3f7d784full}, {0x8b2dd65b15c4b1f9ull, 0x163a432c8f5cd663ull},
    {0x6df94bf1db35de77ull, 0x1bc8d3f7b3340bfcull}, {0xc4bbcf772901ab0aull, 0x115d847ad000877dull},
    {0x35eac354f34215cdull, 0x15b4e5998400a95dull}, {0x8365742a30129b40ull, 0x1b221effe500d3b4ull},
    {0xd21f689a5e0ba108ull, 0x10f5535fef208450ull}, {0x06a742c0f58e894aull, 0x1532a837eae8a565ull},
    {0x4851137132f22b9dull, 0x1a7f5245e5a2cebeull}, {0xed32ac26bfd75b42ull, 0x108f936baf85c136ull},
    {0xa87f57306fcd3212ull, 0x14b378469b673184ull}, {0xd29f2cfc8bc07e97ull, 0x19e056584240fde5ull},
    {0xa3a37c1dd7584f1eull, 0x102c35f729689eafull}, {0x8c8c5b254d2e62e6ull, 0x14374374f3c2c65bull},
    {0x6faf71eea079fb9full, 0x1945145230b377f2ull}, {0x0b9b4e6a48987a87ull, 0x1f965966bce055efull},
    {0x674111026d5f4c94ull, 0x13bdf7e0360c35b5ull}, {0xc111554308b71fbaull, 0x18ad75d8438f4322ull},
    {0x7155aa93cae4e7a8ull, 0x1ed8d34e547313ebull}, {0x26d58a9c5ecf10c9ull, 0x13478410f4c7ec73ull},
    {0xf08aed437682d4fbull, 0x1819651531f9e78full}, {0xecada89454238a3aull, 0x1e1fbe5a7e786173ull},
    {0x73ec895cb4963664ull, 0x12d3d6f88f0b3ce8ull}, {0x90e7abb3e1bbc3fdull, 0x1788ccb6b2ce0c22ull},
    {0x352196a0da2ab4fdull, 0x1d6affe45f818f2bull}, {0x0134fe24885ab11eull, 0x1262dfeebbb0f97bull},
    {0xc1823dadaa715d65ull, 0x16fb97ea6a9d37d9ull}, {0x31e2cd19150db4bfull, 0x1cba7de5054485d0ull},
    {0x1f2dc02fad2890f7ull, 0x11f48eaf234ad3a2ull}, {0xa6f9303b9872b535ull, 0x1671b25aec1d888aull},
    {0x50b77c4a7e8f6282ull, 0x1c0e1ef1a724eaadull}, {0x5272adae8f199d91ull, 0x1188d357087712acull},
    {0x670f591a32e004f6ull, 0x15eb082cca94d757ull}, {0x40d32f60bf980633ull, 0x1b65ca37fd3a0d2dull},
    {0x4883fd9c77bf03e0ull, 0x111f9e62fe44483cull}, {0x5aa4fd0395aec4d8ull, 0x156785fbbdd55a4bull},
    {0x314e3c447b1a760eull, 0x1ac1677aad4ab0deull}, {0xded0e5aaccf089c9ull, 0x10b8e0acac4eae8aull},
    {0x96851f15802cac3bull, 0x14e718d7d7625a2dull}, {0xfc2666dae037d74aull, 0x1a20df0dcd3af0b8ull},
    {0x9d980048cc22e68eull, 0x10548b68a044d673ull}, {0x84fe005aff2ba032ull, 0x1469ae42c8560c10ull},
    {0xa63d8071bef6883eull, 0x198419d37a6b8f14ull}, {0xcfcce08e2eb42a4eull, 0x1fe52048590672d9ull},
    {0x21e00c58dd309a70ull, 0x13ef342d37a407c8ull}, {0x2a580f6f147cc10dull, 0x18eb0138858d09baull},
    {0xb4ee134ad99bf150ull, 0x1f25c186a6f04c28ull}, {0x7114cc0ec80176d2ull, 0x137798f428562f99ull},
    {0xcd59ff127a01d486ull, 0x18557f31326bbb7full}, {0xc0b07ed7188249a8ull, 0x1e6adefd7f06aa5full},
    {0xd86e4f466f516e09ull, 0x1302cb5e6f642a7bull}, {0xce89e3180b25c98bull, 0x17c37e360b3d351aull},
    {0x822c5bde0def3beeull, 0x1db45dc38e0c8261ull}, {0xf15bb96ac8b58575ull, 0x1290ba9a38c7d17cull},
    {0x2db2a7c57ae2e6d2ull, 0x1734e940c6f9c5dcull}, {0x391f51b6d99ba086ull, 0x1d022390f8b83753ull},
    {0x03b3931248014454ull, 0x1221563a9b732294ull}, {0x04a077d6da019569ull, 0x16a9abc9424feb39ull},
    {0x45c895cc9081fac3ull, 0x1c5416bb92e3e607ull}, {0x8b9d5d9fda513cbaull, 0x11b48e353bce6fc4ull},
    {0xae84b507d0e58be8ull, 0x1621b1c28ac20bb5ull}, {0x1a25e249c51eeee3ull, 0x1baa1e332d728ea3ull},
    {0xf057ad6e1b33554dull, 0x114a52dffc679925ull}, {0x6c6d98c9a2002aa1ull, 0x159ce797fb817f6full},
    {0x4788fefc0a803549ull, 0x1b04217dfa61df4bull}, {0x0cb59f5d8690214eull, 0x10e294eebc7d2b8full},
    {0xcfe30734e83429a1ull, 0x151b3a2a6b9c7672ull}, {0x83dbc9022241340aull, 0x1a6208b50683940full},
    {0xb2695da15568c086ull, 0x107d457124123c89ull}, {0x1f03b509aac2f0a7ull, 0x149c96cd6d16cbacull},
    {0x26c4a24c1573acd1ull, 0x19c3bc80c85c7e97ull}, {0x783ae56f8d684c03ull, 0x101a55d07d39cf1eull},
    {0x16499ecb70c25f03ull, 0x1420eb449c8842e6ull}, {0x9bdc067e4cf2f6c4ull, 0x19292615c3aa539full},
    {0x82d3081de02fb476ull, 0x1f736f9b3494e887ull}, {0xb1c3e512ac1dd0c9ull, 0x13a825c100dd1154ull},
    {0xde34de57572544fcull, 0x18922f31411455a9ull}, {0x55c215ed2cee963bull, 0x1eb6bafd91596b14ull},
    {0xb5994db43c151de5ull, 0x133234de7ad7e2ecull}, {0xe2ffa1214b1a655eull, 0x17fec216198ddba7ull},
    {0xdbbf89699de0feb6ull, 0x1dfe729b9ff15291ull}, {0x2957b5e202ac9f31ull, 0x12bf07a143f6d39bull},
    {0xf3ada35a8357c6feull, 0x176ec98994f48881ull}, {0x70990c31242db8bdull, 0x1d4a7bebfa31aaa2ull},
    {0x865fa79eb69c9376ull, 0x124e8d737c5f0aa5ull}, {0xe7f791866443b854ull, 0x16e230d05b76cd4eull},
    {0xa1f575e7fd54a669ull, 0x1c9abd04725480a2ull}, {0xa53969b0fe54e801ull, 0x11e0b622c774d065ull},
    {0x0e87c41d3dea2202ull, 0x1658e3ab7952047full}, {0xd229b5248d64aa82ull, 0x1bef1c9657a6859eull},
    {0x435a1136d85eea91ull, 0x117571ddf6c81383ull}, {0x143095848e76a536ull, 0x15d2ce55747a1864ull},
    {0x193cbae5b2144e83ull, 0x1b4781ead1989e7dull}, {0x2fc5f4cf8f4cb112ull, 0x110cb132c2ff630eull},
    {0xbbb77203731fdd56ull, 0x154fdd7f73bf3bd1ull}, {0x2aa54e844fe7d4acull, 0x1aa3d4df50af0ac6ull},
    {0xdaa75112b1f0e4ebull, 0x10a6650b926d66bbull}, {0xd15125575e6d1e26ull, 0x14cffe4e7708c06aull},
    {0x85a56ead360865b0ull, 0x1a03fde214caf085ull}, {0x7387652c41c53f8eull, 0x10427ead4cfed653ull},
    {0x50693e7752368f71ull, 0x14531e58a03e8be8ull}, {0x64838e1526c4334eull, 0x1967e5eec84e2ee2ull},
    {0xfda4719a70754022ull, 0x1fc1df6a7a61ba9aull}, {0xde86c70086494815ull, 0x13d92ba28c7d14a0ull},
    {0x162878c0a7db9a1aull, 0x18cf768b2f9c59c9ull}, {0x5bb296f0d1d280a1ull, 0x1f03542dfb83703bull},
    {0x194f9e5683239064ull, 0x1362149cbd322625ull}, {0x5fa385ec23ec747eull, 0x183a99c3ec7eafaeull},
    {0xf78c67672ce7919dull, 0x1e494034e79e5b99ull}, {0x3ab7c0a07c10bb02ull, 0x12edc82110c2f940ull},
    {0x4965b0c89b14e9c3ull, 0x17a93a2954f3b790ull}, {0x5bbf1cfac1da2433ull, 0x1d9388b3aa30a574ull},
    {0xb957721cb92856a0ull, 0x127c35704a5e6768ull}, {0xe7ad4ea3e7726c48ull, 0x171b42cc5cf60142ull},
    {0xa198a24ce14f075aull, 0x1ce2137f74338193ull}, {0x44ff65700cd16498ull, 0x120d4c2fa8a030fcull},
    {0x563f3ecc1005bdbeull, 0x16909f3b92c83d3bull}, {0x2bcf0e7f14072d2eull, 0x1c34c70a777a4c8aull},
    {0x5b61690f6c847c3dull, 0x11a0fc668aac6fd6ull}, {0xf239c35347a59b4cull, 0x16093b802d578bcbull},
    {0xeec83428198f021full, 0x1b8b8a6038ad6ebeull}, {0x553d20990ff96153ull, 0x1137367c236c6537ull},
    {0x2a8c68bf53f7b9a8ull, 0x1585041b2c477e85ull}, {0x752f82ef28f5a812ull, 0x1ae64521f7595e26ull},
    {0x093db1d57999890bull, 0x10cfeb353a97dad8ull}, {0x0b8d1e4ad7ffeb4eull, 0x1503e602893dd18eull},
    {0x8e7065dd8dffe622ull, 0x1a44df832b8d45f1ull}, {0xf9063faa78bfefd5ull, 0x106b0bb1fb384bb6ull},
    {0xb747cf9516efebcaull, 0x1485ce9e7a065ea4ull}, {0xe519c37a5cabe6bdull, 0x19a742461887f64dull},
    {0xaf301a2c79eb7036ull, 0x1008896bcf54f9f0ull}, {0xdafc20b798664c43ull, 0x140aabc6c32a386cull},
    {0x11bb28e57e7fdf54ull, 0x190d56b873f4c688ull}, {0x1629f31ede1fd72aull, 0x1f50ac6690f1f82aull},
    {0x4dda37f34ad3e67aull, 0x13926bc01a973b1aull}, {0xe150c5f01d88e019ull, 0x187706b0213d09e0ull},
    {0x19a4f76c24eb181full, 0x1e94c85c298c4c59ull}, {0xb0071aa39712ef13ull, 0x131cfd3999f7afb7ull},
    {0x9c08e14c7cd7aad8ull, 0x17e43c8800759ba5ull}, {0x030b199f9c0d958eull, 0x1ddd4baa0093028full},
    {0x61e6f003c1887d79ull, 0x12aa4f4a405be199ull}, {0xba60ac04b1ea9cd7ull, 0x1754e31cd072d9ffull},
    {0xa8f8d705de65440dull, 0x1d2a1be4048f907full}, {0xc99b8663aaff4a88ull, 0x123a516e82d9ba4full},
    {0xbc0267fc95bf1d2aull, 0x16c8e5ca239028e3ull}, {0xab0301fbbb2ee474ull, 0x1c7b1f3cac74331cull},
    {0xeae1e13d54fd4ec9ull, 0x11ccf385ebc89ff1ull}, {0x659a598caa3ca27bull, 0x1640306766bac7eeull},
    {0xff00efefd4cbcb1aull, 0x1bd03c81406979e9ull}, {0x3f6095f5e4ff5ef0ull, 0x116225d0c841ec32ull},
    {0xcf38bb735e3f36acull, 0x15baaf44fa52673eull}, {0x8306ea5035cf0457ull, 0x1b295b1638e7010eull},
    {0x11e4527221a162b6ull, 0x10f9d8ede39060a9ull}, {0x565d670eaa09bb64ull, 0x15384f295c7478d3ull},
    {0x2bf4c0d2548c2a3dull, 0x1a8662f3b3919708ull}, {0x1b78f88374d79a66ull, 0x1093fdd8503afe65ull},
    {0x625736a4520d8100ull, 0x14b8fd4e6449bdfeull}, {0xfaed044d6690e140ull, 0x19e73ca1fd5c2d7dull},
    {0xbcd422b0601a8cc8ull, 0x103085e53e599c6eull}, {0x6c092b5c78212ffaull, 0x143ca75e8df0038aull},
    {0x070b763396297bf8ull, 0x194bd136316c046dull}, {0x48ce53c07bb3daf6ull, 0x1f9ec583bdc70588ull},
    {0x2d80f4584d5068daull, 0x13c33b72569c6375ull}, {0x78e1316e60a48310ull, 0x18b40a4eec437c52ull},
};

/* ------------------------------------------------------------------ */
/* Ryu: the shortest decimal for a double                              */
/* ------------------------------------------------------------------ */

typedef unsigned __int128 u128;

/* ceil(log2(5^e)) for e in [1, 3528]; 1 for e = 0 (the bit length of 5^e). */
static inline int32_t pow5bits(int32_t e) { return (int32_t)(((uint32_t)e * 1217359u) >> 19) + 1; }
/* floor(log10(2^e)) for e in [0, 1650]. */
static inline uint32_t log10_pow2(int32_t e) { return ((uint32_t)e * 78913u) >> 18; }
/* floor(log10(5^e)) for e in [0, 2620]. */
static inline uint32_t log10_pow5(int32_t e) { return ((uint32_t)e * 732923u) >> 20; }

static inline uint32_t pow5_factor(uint64_t v) {
  uint32_t c = 0;
  while (v && v % 5 == 0) { v /= 5; c++; }
  return c;
}
static inline int mult_pow5(uint64_t v, uint32_t p) { return pow5_factor(v) >= p; }
static inline int mult_pow2(uint64_t v, uint32_t p) { return (v & ((1ull << p) - 1)) == 0; }

/* (m * mul) >> j, mul a 128-bit table entry, j >= 64. */
static inline uint64_t mul_shift(uint64_t m, const uint64_t *mul, int32_t j) {
  u128 b0 = (u128)m * mul[0];
  u128 b2 = (u128)m * mul[1];
  return (uint64_t)(((b0 >> 64) + b2) >> (j - 64));
}

/* The shortest (then nearest) decimal digits*10^exp of the positive finite
 * double with biased exponent ieee_e and mantissa ieee_m. */
static void d2d(uint64_t ieee_m, uint32_t ieee_e, uint64_t *out_digits, int32_t *out_exp) {
  int32_t e2;
  uint64_t m2;
  if (ieee_e == 0) {
    e2 = 1 - 1023 - 52 - 2;
    m2 = ieee_m;
  } else {
    e2 = (int32_t)ieee_e - 1023 - 52 - 2;
    m2 = (1ull << 52) | ieee_m;
  }
  const int accept_bounds = (m2 & 1) == 0; /* round-half-even reads back an even mantissa */
  /* The interval of decimals that read back to this double is
   * [mm, mp] * 2^e2 (bounds included iff accept_bounds), around mv. */
  const uint64_t mv = 4 * m2;
  const uint32_t mm_shift = ieee_m != 0 || ieee_e <= 1; /* lower gap halves at a power of 2 */

  uint64_t vr, vp, vm;
  int32_t e10;
  int vm_tz = 0, vr_tz = 0; /* vm / vr exact (every digit removed so far was 0) */
  if (e2 >= 0) {
    const uint32_t q = log10_pow2(e2) - (e2 > 3);
    e10 = (int32_t)q;
    const int32_t k = POW5_INV_BITCOUNT + pow5bits((int32_t)q) - 1;
    const int32_t i = -e2 + (int32_t)q + k;
    vr = mul_shift(mv, POW5_INV_SPLIT[q], i);
    vp = mul_shift(mv + 2, POW5_INV_SPLIT[q], i);
    vm = mul_shift(mv - 1 - mm_shift, POW5_INV_SPLIT[q], i);
    if (q <= 21) {
      /* Only then can 5^q divide a 55-bit value. */
      if (mv % 5 == 0) vr_tz = mult_pow5(mv, q);
      else if (accept_bounds) vm_tz = mult_pow5(mv - 1 - mm_shift, q);
      else vp -= (uint64_t)mult_pow5(mv + 2, q);
    }
  } else {
    const uint32_t q = log10_pow5(-e2) - (-e2 > 1);
    e10 = (int32_t)q + e2;
    const int32_t i = -e2 - (int32_t)q;
    const int32_t k = pow5bits(i) - POW5_BITCOUNT;
    const int32_t j = (int32_t)q - k;
    vr = mul_shift(mv, POW5_SPLIT[i], j);
    vp = mul_shift(mv + 2, POW5_SPLIT[i], j);
    vm = mul_shift(mv - 1 - mm_shift, POW5_SPLIT[i], j);
    if (q <= 1) {
      /* mv has at least two trailing zero bits, so vr is exact. */
      vr_tz = 1;
      if (accept_bounds) vm_tz = mm_shift == 1;
      else --vp;
    } else if (q < 63) {
      /* vr = mv * 5^i / 2^q is exact iff 2^q divides mv. */
      vr_tz = mult_pow2(mv, q);
    }
  }

  /* Drop digits while the interval still holds a shorter decimal. */
  int32_t removed = 0;
  uint8_t last = 0;
  uint64_t output;
  if (vm_tz || vr_tz) {
    /* The rare general case: track exactness for the bounds and ties. */
    for (;;) {
      uint64_t vp10 = vp / 10, vm10 = vm / 10;
      if (vp10 <= vm10) break;
      uint32_t vm_mod = (uint32_t)(vm - 10 * vm10);
      uint64_t vr10 = vr / 10;
      uint32_t vr_mod = (uint32_t)(vr - 10 * vr10);
      vm_tz &= vm_mod == 0;
      vr_tz &= last == 0;
      last = (uint8_t)vr_mod;
      vr = vr10; vp = vp10; vm = vm10;
      removed++;
    }
    if (vm_tz) {
      for (;;) {
        uint64_t vm10 = vm / 10;
        uint32_t vm_mod = (uint32_t)(vm - 10 * vm10);
        if (vm_mod != 0) break;
        uint64_t vp10 = vp / 10, vr10 = vr / 10;
        uint32_t vr_mod = (uint32_t)(vr - 10 * vr10);
        vr_tz &= last == 0;
        last = (uint8_t)vr_mod;
        vr = vr10; vp = vp10; vm = vm10;
        removed++;
      }
    }
    if (vr_tz && last == 5 && vr % 2 == 0) last = 4; /* exactly half: round to even */
    output = vr + ((vr == vm && (!accept_bounds || !vm_tz)) || last >= 5);
  } else {
    /* The common case. */
    int round_up = 0;
    uint64_t vp100 = vp / 100, vm100 = vm / 100;
    if (vp100 > vm100) {
      uint64_t vr100 = vr / 100;
      uint32_t vr_mod = (uint32_t)(vr - 100 * vr100);
      round_up = vr_mod >= 50;
      vr = vr100; vp = vp100; vm = vm100;
      removed += 2;
    }
    for (;;) {
      uint64_t vp10 = vp / 10, vm10 = vm / 10;
      if (vp10 <= vm10) break;
      uint64_t vr10 = vr / 10;
      uint32_t vr_mod = (uint32_t)(vr - 10 * vr10);
      round_up = vr_mod >= 5;
      vr = vr10; vp = vp10; vm = vm10;
      removed++;
    }
    output = vr + (vr == vm || round_up);
  }
  *out_digits = output;
  *out_exp = e10 + removed;
}

/* ------------------------------------------------------------------ */
/* Layout                                                              */
/* ------------------------------------------------------------------ */

/* Write digits dig[0..nd) (no leading or trailing zeros), whose value is
 * 0.dig * 10^k, in canonical layout. Returns the length; o gets a NUL. */
static size_t fmt_dec(char *o, int neg, const char *dig, int nd, int64_t k) {
  char *s = o;
  if (neg) *o++ = '-';
  int64_t e = k - 1; /* scientific exponent */
  if (e >= -6 && e < 21) {
    if (k <= 0) {
      *o++ = '0';
      *o++ = '.';
      for (int64_t i = 0; i < -k; i++) *o++ = '0';
      memcpy(o, dig, (size_t)nd);
      o += nd;
    } else if (k < nd) {
      memcpy(o, dig, (size_t)k);
      o += k;
      *o++ = '.';
      memcpy(o, dig + k, (size_t)(nd - k));
      o += nd - k;
    } else {
      memcpy(o, dig, (size_t)nd);
      o += nd;
      for (int64_t i = nd; i < k; i++) *o++ = '0';
      *o++ = '.';
      *o++ = '0';
    }
  } else {
    *o++ = dig[0];
    if (nd > 1) {
      *o++ = '.';
      memcpy(o, dig + 1, (size_t)(nd - 1));
      o += nd - 1;
    }
    *o++ = 'e';
    if (e < 0) {
      *o++ = '-';
      e = -e;
    } else {
      *o++ = '+';
    }
    char t[8];
    int m = 0;
    do { t[m++] = (char)('0' + e % 10); e /= 10; } while (e);
    while (m) *o++ = t[--m];
  }
  *o = 0;
  return (size_t)(o - s);
}

size_t json_fmt_uint64(uint64_t v, char *out) {
  char t[24];
  int m = 0;
  do { t[m++] = (char)('0' + v % 10); v /= 10; } while (v);
  size_t n = (size_t)m;
  for (size_t i = 0; i < n; i++) out[i] = t[--m];
  out[n] = 0;
  return n;
}

size_t json_fmt_int64(int64_t v, char *out) {
  if (v >= 0) return json_fmt_uint64((uint64_t)v, out);
  out[0] = '-';
  return 1 + json_fmt_uint64(0 - (uint64_t)v, out + 1);
}

size_t json_fmt_double(double d, char out[JSON_NUM_BUF]) {
  if (!isfinite(d)) { out[0] = 0; return 0; }
  uint64_t bits;
  memcpy(&bits, &d, 8);
  int neg = (int)(bits >> 63);
  uint64_t ieee_m = bits & ((1ull << 52) - 1);
  uint32_t ieee_e = (uint32_t)((bits >> 52) & 0x7ff);
  if (ieee_e == 0 && ieee_m == 0) {
    memcpy(out, neg ? "-0.0" : "0.0", neg ? 5 : 4);
    return neg ? 4 : 3;
  }
  uint64_t digits;
  int32_t exp;
  d2d(ieee_m, ieee_e, &digits, &exp);
  char dig[24];
  int nd = (int)json_fmt_uint64(digits, dig);
  /* Ryu never leaves trailing zeros except for integers it did not need to
   * shorten (e.g. 100.0 as digits 1, exp 2 — or as 100, exp 0): strip. */
  while (nd > 1 && dig[nd - 1] == '0') { nd--; exp++; }
  return fmt_dec(out, neg, dig, nd, (int64_t)nd + exp);
}

/* ------------------------------------------------------------------ */
/* Number text                                                         */
/* ------------------------------------------------------------------ */

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of the JSON number at the start of s[0..n), 0 if there is none;
 * *is_int says it has neither fraction nor exponent. */
static size_t num_len(const char *s, size_t n, int *is_int) {
  const char *p = s, *e = s + n;
  *is_int = 1;
  if (p < e && *p == '-') p++;
  if (p == e) return 0;
  if (*p == '0') {
    p++;
  } else if (*p >= '1' && *p <= '9') {
    while (p < e && is_digit(*p)) p++;
  } else {
    return 0;
  }
  if (p < e && *p == '.') {
    p++;
    if (p == e || !is_digit(*p)) return 0;
    while (p < e && is_digit(*p)) p++;
    *is_int = 0;
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < e && (*p == '+' || *p == '-')) p++;
    if (p == e || !is_digit(*p)) return 0;
    while (p < e && is_digit(*p)) p++;
    *is_int = 0;
  }
  return (size_t)(p - s);
}

/* A number's significant digits: value = (neg ? -1 : 1) * 0.dig * 10^k. */
struct dec {
  int neg;        /* a leading '-' */
  int huge;       /* the exponent text overflowed our counter */
  size_t nd;      /* significant digits (0: the value is zero) */
  int64_t k;      /* decimal point position */
  char dig[20];   /* the first min(nd, 19) significant digits */
};

static void decompose(const char *s, size_t n, struct dec *d) {
  const char *p = s, *e = s + n;
  d->neg = 0;
  d->huge = 0;
  if (p < e && *p == '-') { d->neg = 1; p++; }
  const char *ip = p;
  while (p < e && is_digit(*p)) p++;
  size_t il = (size_t)(p - ip);
  const char *fp = p;
  size_t fl = 0;
  if (p < e && *p == '.') {
    fp = ++p;
    while (p < e && is_digit(*p)) p++;
    fl = (size_t)(p - fp);
  }
  int64_t ex = 0;
  if (p < e && (*p == 'e' || *p == 'E')) {
    p++;
    int eneg = 0;
    if (p < e && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    for (; p < e; p++) {
      if (ex < 1000000000000LL) ex = ex * 10 + (*p - '0');
      else d->huge = 1;
    }
    if (eneg) ex = -ex;
  }
#define DIGIT(i) ((i) < il ? ip[(i)] : fp[(i) - il])
  size_t total = il + fl, f = 0;
  while (f < total && DIGIT(f) == '0') f++;
  if (f == total) {
    d->nd = 0;
    d->k = 0;
    return;
  }
  size_t l = total - 1;
  while (DIGIT(l) == '0') l--;
  d->nd = l - f + 1;
  d->k = (int64_t)il - (int64_t)f + ex;
  for (size_t i = 0; i < d->nd && i < 19; i++) d->dig[i] = DIGIT(f + i);
#undef DIGIT
}

/* strtod over s[0..n) (a valid JSON number). */
static int text_to_double(const char *s, size_t n, double *out) {
  char small[256];
  char *buf = small;
  if (n >= sizeof small) {
    buf = dv_malloc(n + 1);
    if (!buf) return DV_ENOMEM;
  }
  memcpy(buf, s, n);
  buf[n] = 0;
  *out = strtod(buf, NULL);
  if (buf != small) dv_free(buf);
  return 0;
}

static const double pow10_exact[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static json_numclass int_class(const char *s, size_t n) {
  int neg = s[0] == '-';
  const char *d = s + neg;
  size_t nd = n - (size_t)neg;
  if (neg && nd == 1 && d[0] == '0') return JSON_NUM_TEXT; /* "-0" */
  if (nd < 19) return JSON_NUM_INT64;
  if (nd == 19) {
    if (neg) return memcmp(d, "9223372036854775808", 19) <= 0 ? JSON_NUM_INT64 : JSON_NUM_BIGINT;
    return memcmp(d, "9223372036854775807", 19) <= 0 ? JSON_NUM_INT64 : JSON_NUM_UINT64;
  }
  if (nd == 20 && !neg)
    return memcmp(d, "18446744073709551615", 20) <= 0 ? JSON_NUM_UINT64 : JSON_NUM_BIGINT;
  return JSON_NUM_BIGINT;
}

/* 1 if s (a valid non-integer) is already canonical in the most common
 * shape: plain "I.F" with no exponent, F not ending in 0, at most 15
 * digits, and at most five zeros after the point before the first
 * significant digit when I is 0 (so the value is >= 1e-6). */
static int plain_canonical(const char *s, size_t n) {
  const char *p = s, *e = s + n;
  if (*p == '-') p++;
  const char *ip = p;
  while (p < e && is_digit(*p)) p++;
  if (p == e || *p != '.') return 0;
  size_t il = (size_t)(p - ip);
  const char *fp = ++p;
  while (p < e && is_digit(*p)) p++;
  if (p != e || e[-1] == '0' || il + (size_t)(e - fp) > 15) return 0;
  if (ip[0] == '0') {
    size_t z = 0;
    while (fp + z < e && fp[z] == '0') z++;
    if (z > 5) return 0;
  }
  return 1;
}

int json__num_canon(const char *s, size_t n, int is_int, json_num *out) {
  if (is_int) {
    out->cls = int_class(s, n);
    out->text = s;
    out->len = n;
    return 0;
  }
  if (plain_canonical(s, n)) {
    out->cls = JSON_NUM_DOUBLE;
    out->text = s;
    out->len = n;
    return 0;
  }
  struct dec d;
  decompose(s, n, &d);
  size_t len;
  if (d.nd == 0) {
    len = fmt_dec(out->tmp, d.neg, "0", 1, 1);
  } else if (!d.huge && d.nd <= 15 && d.k >= -306 && d.k <= 308) {
    /* The text path (see the top of this file): scientific exponent
     * k - 1 within [-307, 307]. */
    len = fmt_dec(out->tmp, d.neg, d.dig, (int)d.nd, d.k);
  } else {
    double x;
    int rc = text_to_double(s, n, &x);
    if (rc) return rc;
    if (isinf(x) || x == 0) {
      /* overflow, or non-zero digits underflowing to zero */
      out->cls = JSON_NUM_TEXT;
      out->text = s;
      out->len = n;
      return 0;
    }
    len = json_fmt_double(x, out->tmp);
  }
  out->cls = JSON_NUM_DOUBLE;
  out->len = len;
  out->text = (len == n && memcmp(out->tmp, s, n) == 0) ? s : out->tmp;
  return 0;
}

int json_num_parse(const char *s, size_t n, json_num *out) {
  int is_int;
  if (!s || n == 0 || num_len(s, n, &is_int) != n) return DV_EJSON;
  return json__num_canon(s, n, is_int, out);
}

int json_num_classify(const char *s, size_t n) {
  json_num num;
  if (json_num_parse(s, n, &num)) return -1;
  return (int)num.cls;
}

int json_num_uint64(const char *s, size_t n, uint64_t *out) {
  int is_int;
  if (!s || n == 0 || num_len(s, n, &is_int) != n || !is_int) return DV_EINVAL;
  if (s[0] == '-') {
    if (n == 2 && s[1] == '0') { *out = 0; return 0; }
    return DV_ERANGE;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned dg = (unsigned)(s[i] - '0');
    if (v > (UINT64_MAX - dg) / 10) return DV_ERANGE;
    v = v * 10 + dg;
  }
  *out = v;
  return 0;
}

int json_num_int64(const char *s, size_t n, int64_t *out) {
  int is_int;
  if (!s || n == 0 || num_len(s, n, &is_int) != n || !is_int) return DV_EINVAL;
  int neg = s[0] == '-';
  uint64_t v = 0;
  for (size_t i = (size_t)neg; i < n; i++) {
    unsigned dg = (unsigned)(s[i] - '0');
    if (v > (UINT64_MAX - dg) / 10) return DV_ERANGE;
    v = v * 10 + dg;
  }
  if (neg) {
    if (v > (uint64_t)INT64_MAX + 1) return DV_ERANGE;
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  } else {
    if (v > (uint64_t)INT64_MAX) return DV_ERANGE;
    *out = (int64_t)v;
  }
  return 0;
}

int json_num_double(const char *s, size_t n, double *out) {
  int is_int;
  if (!s || n == 0 || num_len(s, n, &is_int) != n) return DV_EINVAL;
  struct dec d;
  decompose(s, n, &d);
  if (d.nd == 0) {
    *out = d.neg ? -0.0 : 0.0;
    return 0;
  }
  if (!d.huge && d.nd <= 15) {
    /* Clinger's fast path: an integer below 2^53 times or over an exact
     * power of ten is one correctly rounded operation. */
    int64_t p = d.k - (int64_t)d.nd;
    if (p >= -22 && p <= 22) {
      uint64_t m = 0;
      for (size_t i = 0; i < d.nd; i++) m = m * 10 + (uint64_t)(d.dig[i] - '0');
      double x = (double)m;
      x = p >= 0 ? x * pow10_exact[p] : x / pow10_exact[-p];
      *out = d.neg ? -x : x;
      return 0;
    }
  }
  double x;
  int rc = text_to_double(s, n, &x);
  if (rc) return rc;
  *out = x;
  return isinf(x) || x == 0 ? DV_ERANGE : 0;
}
