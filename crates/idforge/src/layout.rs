//! Layouts: where node, time, counter and random bits sit in an id, plus fixed bits (a UUID's
//! version and variant), the epoch and the tick unit. [`Layout::encode`] and [`Layout::decode`] are
//! exact inverses on every field.
//!
//! A field is one run of bits or, where fixed bits cut through it (a UUIDv7 counter wider than
//! `rand_a` continues below the variant bits), two runs: the value's high bits in the first.

use std::time::Duration;

use crate::error::Error;
use crate::sequencer::Timebase;
use crate::time::{format_unix_ns, parse_rfc3339, year_of_unix_ns};

/// A run of bits in an id: `width` bits starting `shift` bits above the least significant bit.
///
/// ```
/// use idforge::layout::Segment;
/// // The 12-bit counter of a Snowflake id: bits 0..12.
/// let s = Segment::new(0, 12);
/// assert_eq!((s.shift, s.width), (0, 12));
/// assert_eq!(Segment::default().width, 0); // absent
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Segment {
    /// Position of the run's least significant bit.
    pub shift: u32,
    /// Number of bits (0: absent).
    pub width: u32,
}

impl Segment {
    /// A run of `width` bits at `shift`.
    ///
    /// ```
    /// use idforge::layout::Segment;
    /// let s = Segment::new(22, 41);
    /// assert_eq!(s.shift + s.width, 63);
    /// ```
    pub const fn new(shift: u32, width: u32) -> Self {
        Segment { shift, width }
    }

    fn mask(self) -> u128 {
        if self.width == 0 {
            0
        } else {
            (u128::MAX >> (128 - self.width)) << self.shift
        }
    }
}

/// A logical field: up to two runs of bits, the value's high part in `hi`.
///
/// ```
/// use idforge::{layout::Segment, Field};
/// // A UUIDv7 counter of 16 bits: 12 in `rand_a`, the low 4 below the variant bits.
/// let f = Field::split(Segment::new(64, 12), Segment::new(58, 4));
/// assert_eq!(f.width(), 16);
/// assert_eq!(f.extract(f.deposit(0xABCD)), 0xABCD);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Field {
    /// The run holding the value's high bits (or all of them).
    pub hi: Segment,
    /// The run holding the value's low `lo.width` bits, if the field is split.
    pub lo: Segment,
}

impl Field {
    /// A field in one run.
    ///
    /// ```
    /// use idforge::Field;
    /// let node = Field::at(12, 10);
    /// assert_eq!(node.deposit(5), 5 << 12);
    /// assert_eq!(node.lo.width, 0); // one run
    /// ```
    pub const fn at(shift: u32, width: u32) -> Self {
        Field {
            hi: Segment::new(shift, width),
            lo: Segment::new(0, 0),
        }
    }

    /// A field split in two runs: `hi` gets the high bits.
    ///
    /// ```
    /// use idforge::{layout::Segment, Field};
    /// let f = Field::split(Segment::new(64, 12), Segment::new(58, 4));
    /// // The high 12 bits of the value go to bits 64.., the low 4 to bits 58..62.
    /// assert_eq!(f.deposit(0xFFFF), (0xFFF << 64) | (0xF << 58));
    /// ```
    pub const fn split(hi: Segment, lo: Segment) -> Self {
        Field { hi, lo }
    }

    /// The field's width in bits.
    ///
    /// ```
    /// use idforge::{layout::Segment, Field};
    /// assert_eq!(Field::at(0, 12).width(), 12);
    /// assert_eq!(Field::split(Segment::new(64, 12), Segment::new(58, 4)).width(), 16);
    /// ```
    pub const fn width(&self) -> u32 {
        self.hi.width + self.lo.width
    }

    /// The largest value the field holds.
    ///
    /// ```
    /// use idforge::Field;
    /// assert_eq!(Field::at(12, 10).max(), 1023);
    /// assert_eq!(Field::default().max(), 0);
    /// ```
    pub fn max(&self) -> u128 {
        match self.width() {
            0 => 0,
            w => u128::MAX >> (128 - w),
        }
    }

    fn mask(&self) -> u128 {
        self.hi.mask() | self.lo.mask()
    }

    /// Places `value` (already known to fit) into the field's bits.
    ///
    /// ```
    /// use idforge::Field;
    /// let counter = Field::at(0, 12);
    /// let node = Field::at(12, 10);
    /// let id = node.deposit(3) | counter.deposit(7);
    /// assert_eq!(id, (3 << 12) | 7);
    /// ```
    #[inline]
    pub fn deposit(&self, value: u128) -> u128 {
        if self.lo.width == 0 {
            value << self.hi.shift
        } else {
            let lo = value & ((1u128 << self.lo.width) - 1);
            ((value >> self.lo.width) << self.hi.shift) | (lo << self.lo.shift)
        }
    }

    /// Reads the field's value out of an id.
    ///
    /// ```
    /// use idforge::Field;
    /// let node = Field::at(12, 10);
    /// assert_eq!(node.extract((3 << 12) | 7), 3);
    /// ```
    #[inline]
    pub fn extract(&self, id: u128) -> u128 {
        let hi = (id & self.hi.mask()) >> self.hi.shift;
        if self.lo.width == 0 {
            hi
        } else {
            (hi << self.lo.width) | ((id & self.lo.mask()) >> self.lo.shift)
        }
    }
}

/// Whether a layout's ids fit a signed 64-bit integer ([`Layout::signed64`]).
///
/// ```
/// use idforge::layout::Signed64;
/// use idforge::Scheme;
/// assert_eq!(Scheme::Snowflake.layout().signed64(), Signed64::Always);
/// assert_eq!(Signed64::NodesBelow(512).to_string(), "node<512");
/// assert_eq!(Signed64::Until(2079).to_string(), "to 2079");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signed64 {
    /// Bit 63 is never set.
    Always,
    /// Only for node ids below this (the node field holds bit 63).
    NodesBelow(u128),
    /// Until this year (the time field holds bit 63).
    Until(i32),
    /// Some ids set bit 63 (a counter or random bits there, or a fixed 1).
    Never,
    /// The ids are wider than 64 bits.
    Wider,
}

impl std::fmt::Display for Signed64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signed64::Always => f.write_str("yes"),
            Signed64::NodesBelow(n) => write!(f, "node<{n}"),
            Signed64::Until(y) => write!(f, "to {y}"),
            Signed64::Never => f.write_str("no"),
            Signed64::Wider => f.write_str("-"),
        }
    }
}

/// A complete id layout. Build one with [`Layout::builder`] or parse a spec with
/// [`Layout::parse_spec`]; the schemes' presets are in [`crate::schemes`].
///
/// ```
/// use idforge::Layout;
/// let l = Layout::parse_spec("time:41,node:10,counter:12,tick=1ms,epoch=2010-11-04T01:42:54.657Z").unwrap();
/// let id = l.encode(5, 1_000, 7, 0);
/// let parts = l.decode(id);
/// assert_eq!((parts.node, parts.ticks, parts.counter), (5, 1_000, 7));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Name shown in messages and by `idforge schemes`.
    pub name: String,
    /// Total width of the id: 64, 96 (ObjectId, xid) or 128.
    pub bits: u32,
    /// The node field (may be absent).
    pub node: Field,
    /// The time field, in ticks since the epoch.
    pub time: Field,
    /// The per-tick counter.
    pub counter: Field,
    /// Bits drawn at random for every id (may be absent).
    pub random: Field,
    /// Bits with a fixed value (UUID version and variant).
    pub fixed_mask: u128,
    /// The fixed bits' value (within `fixed_mask`).
    pub fixed_value: u128,
    /// Nanoseconds since the Unix epoch of tick 0.
    pub epoch_ns: u64,
    /// One tick in nanoseconds.
    pub tick_ns: u64,
}

/// The fields of a decoded id.
///
/// ```
/// let l = idforge::Layout::parse_spec("time:41,node:10,counter:12")?;
/// let parts = l.decode(l.encode(3, 1_000, 7, 0));
/// assert_eq!((parts.node, parts.ticks, parts.counter, parts.random), (3, 1_000, 7, 0));
/// assert!(parts.fixed_ok);
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The node field.
    pub node: u128,
    /// The time field, in ticks since the layout's epoch.
    pub ticks: u128,
    /// The counter field.
    pub counter: u128,
    /// The random field.
    pub random: u128,
    /// Whether the fixed bits hold their required value.
    pub fixed_ok: bool,
}

impl Layout {
    /// Starts a layout of `bits` (64, 96 or 128) bits with no fields, Unix epoch and 1 ms ticks.
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// let l = Layout::builder("ticket", 64)
    ///     .time(Field::at(16, 40))
    ///     .counter(Field::at(0, 16))
    ///     .tick_ns(10_000_000) // 10 ms ticks
    ///     .build()?;
    /// assert_eq!(l.ids_per_tick(), 65_536);
    /// assert_eq!(l.epoch_ns, 0); // the Unix epoch unless set
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn builder(name: impl Into<String>, bits: u32) -> LayoutBuilder {
        LayoutBuilder {
            layout: Layout {
                name: name.into(),
                bits,
                node: Field::default(),
                time: Field::default(),
                counter: Field::default(),
                random: Field::default(),
                fixed_mask: 0,
                fixed_value: 0,
                epoch_ns: 0,
                tick_ns: 1_000_000,
            },
        }
    }

    /// Checks that every field fits, nothing overlaps, and the time base is sound.
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] (naming the layout) when the id is not 64, 96 or 128 bits wide, the
    /// fixed value has bits outside the fixed mask, a field does not fit in the id or overlaps
    /// another (or the fixed bits), the node field is wider than 64 bits, the time field is
    /// missing, the counter is wider than 32 bits, or the tick is 0 ns.
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// assert!(idforge::Scheme::Snowflake.layout().validate().is_ok());
    /// let mut l = idforge::Scheme::Snowflake.layout();
    /// l.counter = Field::at(60, 12); // runs past bit 64
    /// assert!(l.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::InvalidLayout(format!("{}: {m}", self.name)));
        if self.bits != 64 && self.bits != 96 && self.bits != 128 {
            return bad(format!(
                "an id is 64, 96 (ObjectId, xid) or 128 bits wide, not {}",
                self.bits
            ));
        }
        let fields = [
            ("node", self.node),
            ("time", self.time),
            ("counter", self.counter),
            ("random", self.random),
        ];
        let mut used = self.fixed_mask;
        if self.fixed_value & !self.fixed_mask != 0 {
            return bad("fixed value has bits outside the fixed mask".into());
        }
        for (name, f) in fields {
            for seg in [f.hi, f.lo] {
                if seg.width > 0
                    && u64::from(seg.shift) + u64::from(seg.width) > u64::from(self.bits)
                {
                    return bad(format!(
                        "the {name} field (bits {}..{}) does not fit in {} bits",
                        seg.shift,
                        seg.shift + seg.width,
                        self.bits
                    ));
                }
            }
            let m = f.mask();
            if m & used != 0 {
                return bad(format!("the {name} field overlaps another field"));
            }
            used |= m;
        }
        if self.node.width() > 64 {
            return bad(format!(
                "a node field of {} bits is wider than 64",
                self.node.width()
            ));
        }
        if self.time.width() == 0 {
            return bad("a layout needs a time field of at least 1 bit".into());
        }
        if self.counter.width() > 32 {
            return bad(format!(
                "a counter of {} bits is wider than 32",
                self.counter.width()
            ));
        }
        if self.tick_ns == 0 {
            return bad("the tick must be at least 1 ns".into());
        }
        self.timebase().validate()
    }

    /// Checks that the epoch is not in the future relative to `now_ns`.
    ///
    /// # Errors
    /// [`Error::EpochInFuture`] when the layout's epoch is later than `now_ns`.
    ///
    /// ```
    /// let l = idforge::Scheme::Snowflake.layout(); // epoch 2010-11-04
    /// assert!(l.check_epoch(1_700_000_000_000_000_000).is_ok());
    /// assert!(l.check_epoch(0).is_err());
    /// ```
    pub fn check_epoch(&self, now_ns: u64) -> Result<(), Error> {
        if self.epoch_ns > now_ns {
            return Err(Error::EpochInFuture {
                epoch: format_unix_ns(self.epoch_ns as i128, 9),
                now: format_unix_ns(now_ns as i128, 9),
            });
        }
        Ok(())
    }

    /// The sequencer time base for this layout.
    ///
    /// ```
    /// let tb = idforge::Scheme::Snowflake.layout().timebase();
    /// assert_eq!((tb.time_bits, tb.counter_bits, tb.tick_ns), (41, 12, 1_000_000));
    /// ```
    pub fn timebase(&self) -> Timebase {
        Timebase {
            epoch_ns: self.epoch_ns,
            tick_ns: self.tick_ns,
            time_bits: self.time.width(),
            counter_bits: self.counter.width(),
        }
    }

    /// Builds an id from its fields. Values are truncated to their fields' widths.
    ///
    /// ```
    /// let l = idforge::Layout::parse_spec("time:41,node:10,counter:12")?;
    /// assert_eq!(l.encode(3, 2, 1, 0), (2 << 22) | (3 << 12) | 1);
    /// // A value wider than its field is cut to the field's width.
    /// assert_eq!(l.encode(1024, 0, 0, 0), 0);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    #[inline]
    pub fn encode(&self, node: u128, ticks: u128, counter: u128, random: u128) -> u128 {
        self.fixed_value
            | self.node.deposit(node & self.node.max())
            | self.time.deposit(ticks & self.time.max())
            | self.counter.deposit(counter & self.counter.max())
            | self.random.deposit(random & self.random.max())
    }

    /// Every bit the layout defines: its fields and its fixed bits. An id with bits outside it
    /// was not made by this layout.
    ///
    /// ```
    /// let l = idforge::Scheme::Snowflake.layout();
    /// assert_eq!(l.defined_bits(), (1 << 63) - 1); // bit 63 is never set
    /// assert!(u64::MAX as u128 & !l.defined_bits() != 0);
    /// ```
    pub fn defined_bits(&self) -> u128 {
        self.fixed_mask
            | self.node.mask()
            | self.time.mask()
            | self.counter.mask()
            | self.random.mask()
    }

    /// Splits an id into its fields.
    ///
    /// ```
    /// let l = idforge::Scheme::Snowflake.layout();
    /// // A Snowflake id: time above node above counter.
    /// let parts = l.decode(1_000u128 << 22 | 5 << 12 | 9);
    /// assert_eq!((parts.ticks, parts.node, parts.counter), (1_000, 5, 9));
    /// ```
    pub fn decode(&self, id: u128) -> Parts {
        Parts {
            node: self.node.extract(id),
            ticks: self.time.extract(id),
            counter: self.counter.extract(id),
            random: self.random.extract(id),
            fixed_ok: id & self.fixed_mask == self.fixed_value,
        }
    }

    /// Unix nanoseconds of the start of a tick.
    ///
    /// ```
    /// let l = idforge::Scheme::Snowflake.layout(); // 1 ms ticks from 2010-11-04T01:42:54.657Z
    /// assert_eq!(l.unix_ns_of(0), 1_288_834_974_657_000_000);
    /// assert_eq!(l.unix_ns_of(1), 1_288_834_974_658_000_000);
    /// ```
    pub fn unix_ns_of(&self, ticks: u128) -> u128 {
        ticks
            .saturating_mul(self.tick_ns as u128)
            .saturating_add(self.epoch_ns as u128)
    }

    /// Ids one node can issue per tick.
    ///
    /// ```
    /// assert_eq!(idforge::Scheme::Snowflake.layout().ids_per_tick(), 4096); // a 12-bit counter
    /// ```
    pub fn ids_per_tick(&self) -> u128 {
        1u128 << self.counter.width()
    }

    /// Ids one node can issue per second at most.
    ///
    /// ```
    /// // 4096 per millisecond.
    /// assert_eq!(idforge::Scheme::Snowflake.layout().ids_per_second(), 4_096_000.0);
    /// ```
    pub fn ids_per_second(&self) -> f64 {
        self.ids_per_tick() as f64 * 1e9 / self.tick_ns as f64
    }

    /// The year the time field runs out (the sequencer's `u64` stamp included).
    ///
    /// ```
    /// // 41 bits of milliseconds from 2010 last about 69 years.
    /// assert_eq!(idforge::Scheme::Snowflake.layout().end_year(), 2080);
    /// ```
    pub fn end_year(&self) -> i32 {
        year_of_unix_ns(self.timebase().end_unix_ns())
    }

    /// The number of distinct node ids.
    ///
    /// ```
    /// assert_eq!(idforge::Scheme::Snowflake.layout().node_count(), 1024); // 10 node bits
    /// ```
    pub fn node_count(&self) -> u128 {
        1u128 << self.node.width()
    }

    /// A diagram of the fields from the most significant bit down, as `idforge schemes` prints it.
    ///
    /// ```
    /// assert_eq!(
    ///     idforge::Scheme::Snowflake.layout().diagram(),
    ///     "0(1) | time(41) | node(10) | counter(12)"
    /// );
    /// ```
    pub fn diagram(&self) -> String {
        let mut runs: Vec<(u32, u32, String)> = Vec::new();
        let mut push = |name: &str, f: Field| {
            if f.lo.width == 0 {
                if f.hi.width > 0 {
                    runs.push((f.hi.shift, f.hi.width, format!("{name}({})", f.hi.width)));
                }
            } else {
                runs.push((f.hi.shift, f.hi.width, format!("{name}_hi({})", f.hi.width)));
                runs.push((f.lo.shift, f.lo.width, format!("{name}_lo({})", f.lo.width)));
            }
        };
        push("node", self.node);
        push("time", self.time);
        push("counter", self.counter);
        push("random", self.random);
        // Fixed bits: contiguous runs of the mask.
        let mut bit = 0;
        while bit < self.bits {
            if self.fixed_mask >> bit & 1 == 1 {
                let start = bit;
                while bit < self.bits && self.fixed_mask >> bit & 1 == 1 {
                    bit += 1;
                }
                let w = bit - start;
                let v = (self.fixed_value >> start) & ((1u128 << w) - 1);
                let label = if w == 4 {
                    format!("ver={v:x}")
                } else {
                    format!("var={v:0w$b}", w = w as usize)
                };
                runs.push((start, w, label));
            } else {
                bit += 1;
            }
        }
        runs.sort_by_key(|r| std::cmp::Reverse(r.0));
        let mut out = Vec::new();
        let mut top = self.bits;
        for (shift, width, label) in runs {
            if shift + width < top {
                out.push(format!("0({})", top - shift - width));
            }
            out.push(label);
            top = shift;
        }
        if top > 0 {
            out.push(format!("0({top})"));
        }
        out.join(" | ")
    }

    /// Whether ids of this layout increase with their stamp (time, then counter), so that a
    /// generator's ids are strictly increasing as numbers: every time bit is above every counter
    /// bit, and random bits are below both.
    ///
    /// ```
    /// use idforge::Layout;
    /// assert!(Layout::parse_spec("time:41,node:10,counter:12").unwrap().is_time_ordered());
    /// assert!(!Layout::parse_spec("counter:1,time:63,order=none").unwrap().is_time_ordered());
    /// ```
    pub fn is_time_ordered(&self) -> bool {
        let lowest = |f: &Field| {
            if f.lo.width > 0 {
                f.lo.shift
            } else {
                f.hi.shift
            }
        };
        let highest = |f: &Field| f.hi.shift + f.hi.width - 1;
        let (t, c, r) = (&self.time, &self.counter, &self.random);
        let below_time_counter = if c.width() > 0 {
            lowest(t) > highest(c)
        } else {
            true
        };
        let floor = if c.width() > 0 { lowest(c) } else { lowest(t) };
        below_time_counter && (r.width() == 0 || highest(r) < floor)
    }

    /// Whether the layout's ids fit a signed 64-bit integer (PostgreSQL `bigint`, Java `long`,
    /// MySQL `BIGINT`), that is whether bit 63 stays clear, and on what.
    ///
    /// ```
    /// use idforge::layout::Signed64;
    /// use idforge::Scheme;
    /// assert_eq!(Scheme::Snowflake.layout().signed64(), Signed64::Always);
    /// // GlobalId's node is in the top 10 bits: node 512 and above set bit 63.
    /// assert_eq!(Scheme::GlobalId.layout().signed64(), Signed64::NodesBelow(512));
    /// assert_eq!(Scheme::Uuid7.layout().signed64(), Signed64::Wider);
    /// ```
    pub fn signed64(&self) -> Signed64 {
        if self.bits > 64 {
            return Signed64::Wider;
        }
        const BIT: u32 = 63;
        if (self.fixed_mask >> BIT) & 1 == 1 {
            return if (self.fixed_value >> BIT) & 1 == 1 {
                Signed64::Never
            } else {
                Signed64::Always
            };
        }
        // The bit of the field's value that lands on bit 63, if the field covers it.
        let value_bit = |f: &Field| {
            let covers = |g: Segment| g.width > 0 && g.shift <= BIT && BIT < g.shift + g.width;
            if covers(f.hi) {
                Some(BIT - f.hi.shift + f.lo.width)
            } else if covers(f.lo) {
                Some(BIT - f.lo.shift)
            } else {
                None
            }
        };
        if let Some(b) = value_bit(&self.node) {
            return Signed64::NodesBelow(1u128 << b);
        }
        if let Some(b) = value_bit(&self.time) {
            let year = year_of_unix_ns(self.unix_ns_of(1u128 << b));
            return if year > self.end_year() {
                Signed64::Always
            } else {
                Signed64::Until(year)
            };
        }
        if value_bit(&self.counter).is_some() || value_bit(&self.random).is_some() {
            return Signed64::Never;
        }
        Signed64::Always
    }

    /// Parses a layout spec: fields from the most significant bit down as `name:width`
    /// (`node`, `time`, `counter`), then options `tick=` (`ns`, `us`, `ms`, `s` with a number,
    /// e.g. `10ms`), `epoch=` (RFC 3339) and `order=none`. The fields are packed at the low end of
    /// a 64-bit id (128-bit if they need more than 64 bits), unused high bits zero.
    ///
    /// A counter above the time field makes ids unique but not ordered by time (nor increasing):
    /// such a spec is refused unless it says `order=none`.
    ///
    /// ```
    /// let l = idforge::Layout::parse_spec("node:10,time:47,counter:7").unwrap();
    /// assert_eq!(l.diagram(), "node(10) | time(47) | counter(7)");
    /// assert!(idforge::Layout::parse_spec("node:10,counter:7").is_err()); // no time field
    /// assert!(idforge::Layout::parse_spec("counter:1,time:63").is_err()); // not ordered
    /// assert!(idforge::Layout::parse_spec("counter:1,time:63,order=none").is_ok());
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidLayoutSpec`] saying what is wrong with the spec.
    pub fn parse_spec(spec: &str) -> Result<Layout, Error> {
        let err = |reason: String| Error::InvalidLayoutSpec {
            spec: crate::error::clip(spec),
            reason,
        };
        let mut fields: Vec<(&str, u32)> = Vec::new();
        let mut tick_ns = 1_000_000u64;
        let mut epoch_ns = 0u64;
        let mut unordered = false;
        for item in spec.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(err("an empty item (two commas in a row?)".into()));
            }
            if let Some((k, v)) = item.split_once('=') {
                match k.trim() {
                    "tick" => tick_ns = parse_duration(v.trim()).map_err(err)?,
                    "epoch" => {
                        epoch_ns = parse_rfc3339(v.trim()).map_err(|e| err(e.to_string()))?
                    }
                    "order" => match v.trim() {
                        "none" => unordered = true,
                        "time" => unordered = false,
                        o => {
                            return Err(err(format!(
                                "order={o:?}: use order=none to accept ids that are not ordered by time"
                            )))
                        }
                    },
                    other => {
                        return Err(err(format!(
                            "unknown option {other:?}; the options are tick=, epoch= and order=none"
                        )))
                    }
                }
            } else if let Some((name, w)) = item.split_once(':') {
                let name = name.trim();
                if !["node", "time", "counter"].contains(&name) {
                    return Err(err(format!(
                        "unknown field {name:?}; the fields are node, time and counter"
                    )));
                }
                if fields.iter().any(|(n, _)| *n == name) {
                    return Err(err(format!("the {name} field is given twice")));
                }
                let width: u32 = w
                    .trim()
                    .parse()
                    .map_err(|_| err(format!("the width of {name} must be a number, not {w:?}")))?;
                if width > 128 {
                    return Err(err(format!(
                        "the {name} field of {width} bits is wider than an id (128 bits)"
                    )));
                }
                if width == 0 {
                    return Err(err(format!(
                        "the {name} field needs at least 1 bit; leave it out instead"
                    )));
                }
                fields.push((name, width));
            } else {
                return Err(err(format!("{item:?} is neither name:width nor key=value")));
            }
        }
        if !fields.iter().any(|(n, _)| *n == "time") {
            return Err(err("a layout needs a time field, e.g. time:41".into()));
        }
        let total: u32 = fields.iter().map(|(_, w)| w).sum();
        if total > 128 {
            return Err(err(format!(
                "the fields add up to {total} bits; an id holds at most 128"
            )));
        }
        let bits = if total <= 64 { 64 } else { 128 };
        let mut b = Layout::builder("custom", bits)
            .tick_ns(tick_ns)
            .epoch_ns(epoch_ns);
        let mut shift = total;
        for (name, w) in &fields {
            shift -= w;
            b = match *name {
                "node" => b.node(Field::at(shift, *w)),
                "time" => b.time(Field::at(shift, *w)),
                _ => b.counter(Field::at(shift, *w)),
            };
        }
        let layout = b.build().map_err(|e| err(e.to_string()))?;
        if !unordered && !layout.is_time_ordered() {
            return Err(err(
                "the counter is above the time field, so ids are unique but neither ordered by time nor increasing; put time before counter, or add order=none to accept unordered ids".into(),
            ));
        }
        Ok(layout)
    }

    /// The spec text that [`Layout::parse_spec`] turns back into this layout (custom layouts).
    ///
    /// ```
    /// let l = idforge::Layout::parse_spec("node:10,time:47,counter:7,tick=10ms")?;
    /// assert_eq!(l.spec(), "node:10,time:47,counter:7,tick=10000000ns,epoch=1970-01-01T00:00:00.000000000Z");
    /// assert_eq!(idforge::Layout::parse_spec(&l.spec())?, l);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn spec(&self) -> String {
        let mut fields = [
            ("node", self.node),
            ("time", self.time),
            ("counter", self.counter),
        ]
        .into_iter()
        .filter(|(_, f)| f.width() > 0)
        .collect::<Vec<_>>();
        fields.sort_by_key(|f| std::cmp::Reverse(f.1.hi.shift));
        let mut s: Vec<String> = fields
            .iter()
            .map(|(n, f)| format!("{n}:{}", f.width()))
            .collect();
        s.push(format!("tick={}ns", self.tick_ns));
        s.push(format!(
            "epoch={}",
            format_unix_ns(self.epoch_ns as i128, 9)
        ));
        if !self.is_time_ordered() {
            s.push("order=none".into());
        }
        s.join(",")
    }
}

fn parse_duration(text: &str) -> Result<u64, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("tick {text:?} must be a number with a unit, e.g. 1ms or 10ms"))?;
    let mult = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(format!("tick unit {unit:?} is not one of ns, us, ms, s")),
    };
    let ns = n
        .checked_mul(mult)
        .ok_or_else(|| format!("tick {text:?} is too long"))?;
    if ns == 0 || Duration::from_nanos(ns) > Duration::from_secs(86_400) {
        return Err(format!("tick {text:?} must be between 1ns and one day"));
    }
    Ok(ns)
}

/// Builds a [`Layout`] field by field; [`LayoutBuilder::build`] validates it.
///
/// ```
/// use idforge::{Field, Layout};
/// let l = Layout::builder("mine", 64).time(Field::at(12, 41)).counter(Field::at(0, 12)).build()?;
/// assert_eq!(l.diagram(), "0(11) | time(41) | counter(12)");
/// # Ok::<(), idforge::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct LayoutBuilder {
    layout: Layout,
}

impl LayoutBuilder {
    /// Sets the node field.
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// let l = Layout::builder("mine", 64)
    ///     .node(Field::at(53, 10))
    ///     .time(Field::at(12, 41))
    ///     .build()?;
    /// assert_eq!(l.node_count(), 1024);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn node(mut self, f: Field) -> Self {
        self.layout.node = f;
        self
    }
    /// Sets the time field.
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// let l = Layout::builder("mine", 64).time(Field::at(0, 48)).build()?;
    /// assert_eq!(l.decode(l.encode(0, 77, 0, 0)).ticks, 77);
    /// // Without a time field the layout is refused.
    /// assert!(Layout::builder("mine", 64).build().is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn time(mut self, f: Field) -> Self {
        self.layout.time = f;
        self
    }
    /// Sets the counter field.
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// let l = Layout::builder("mine", 64).time(Field::at(8, 48)).counter(Field::at(0, 8)).build()?;
    /// assert_eq!(l.ids_per_tick(), 256);
    /// // A counter is at most 32 bits wide.
    /// assert!(Layout::builder("mine", 64).time(Field::at(33, 30)).counter(Field::at(0, 33)).build().is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn counter(mut self, f: Field) -> Self {
        self.layout.counter = f;
        self
    }
    /// Sets the random field.
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// let l = Layout::builder("mine", 128)
    ///     .time(Field::at(80, 48))
    ///     .counter(Field::at(64, 16))
    ///     .random(Field::at(0, 64))
    ///     .build()?;
    /// assert_eq!(l.decode(l.encode(0, 1, 2, 3)).random, 3);
    /// assert!(l.is_time_ordered()); // the random bits are below time and counter
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn random(mut self, f: Field) -> Self {
        self.layout.random = f;
        self
    }
    /// Fixes `width` bits at `shift` to `value` (a UUID's version or variant).
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// let l = Layout::builder("v7-like", 128)
    ///     .time(Field::at(80, 48))
    ///     .fixed(76, 4, 7) // version 7
    ///     .fixed(62, 2, 0b10) // RFC 9562 variant
    ///     .random(Field::at(0, 62))
    ///     .build()?;
    /// let id = l.encode(0, 1, 0, 0);
    /// assert_eq!((id >> 76) & 0xF, 7);
    /// assert!(l.decode(id).fixed_ok);
    /// assert!(!l.decode(0).fixed_ok);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn fixed(mut self, shift: u32, width: u32, value: u128) -> Self {
        let mask = Segment::new(shift, width).mask();
        self.layout.fixed_mask |= mask;
        self.layout.fixed_value |= (value << shift) & mask;
        self
    }
    /// Sets the epoch in nanoseconds since the Unix epoch.
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// let l = Layout::builder("mine", 64)
    ///     .time(Field::at(0, 41))
    ///     .epoch_ns(1_577_836_800_000_000_000) // 2020-01-01T00:00:00Z
    ///     .build()?;
    /// assert_eq!(l.unix_ns_of(1), 1_577_836_800_001_000_000);
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn epoch_ns(mut self, ns: u64) -> Self {
        self.layout.epoch_ns = ns;
        self
    }
    /// Sets the tick unit in nanoseconds.
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// let l = Layout::builder("mine", 64).time(Field::at(0, 41)).tick_ns(10_000_000).build()?;
    /// assert_eq!(l.unix_ns_of(3), 30_000_000);
    /// assert!(Layout::builder("mine", 64).time(Field::at(0, 41)).tick_ns(0).build().is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn tick_ns(mut self, ns: u64) -> Self {
        self.layout.tick_ns = ns;
        self
    }
    /// Validates and returns the layout.
    ///
    /// # Errors
    /// [`Error::InvalidLayout`] as [`Layout::validate`].
    ///
    /// ```
    /// use idforge::{Field, Layout};
    /// let l = Layout::builder("mine", 64)
    ///     .node(Field::at(53, 10))
    ///     .time(Field::at(12, 41))
    ///     .counter(Field::at(0, 12))
    ///     .build()?;
    /// assert_eq!(l.decode(l.encode(5, 1_000, 7, 0)).node, 5);
    /// assert!(Layout::builder("overlap", 64).time(Field::at(0, 41)).counter(Field::at(0, 12)).build().is_err());
    /// # Ok::<(), idforge::Error>(())
    /// ```
    pub fn build(self) -> Result<Layout, Error> {
        self.layout.validate()?;
        Ok(self.layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_field_round_trips() {
        let f = Field::split(Segment::new(64, 12), Segment::new(58, 4));
        for v in [0u128, 1, 0xF, 0x10, 0xFFFF, 0xABCD] {
            assert_eq!(f.extract(f.deposit(v)), v);
        }
        assert_eq!(f.deposit(0xFFFF), (0xFFFu128 << 64) | (0xF << 58));
    }

    #[test]
    fn spec_errors_are_specific() {
        let e = |s: &str| Layout::parse_spec(s).unwrap_err().to_string();
        assert!(e("node:10,counter:12").contains("needs a time field"));
        assert!(e("time:41,time:3").contains("given twice"));
        assert!(e("time:x").contains("must be a number"));
        assert!(e("time:41,tick=3 fortnights").contains("tick"));
        assert!(e("time:41,colour=red").contains("unknown option"));
        assert!(e("time:100,node:29").contains("at most 128"));
        assert!(e("time:41,epoch=tomorrow").contains("invalid time"));
        assert!(e("time:41,counter:40").contains("wider than 32"));
        assert!(e("time:41,wibble:3").contains("unknown field"));
    }

    #[test]
    fn spec_round_trips() {
        let l =
            Layout::parse_spec("time:39,counter:8,node:16,tick=10ms,epoch=2014-09-01T00:00:00Z")
                .unwrap();
        assert_eq!(l.diagram(), "0(1) | time(39) | counter(8) | node(16)");
        assert_eq!(Layout::parse_spec(&l.spec()).unwrap(), l);
        assert_eq!(l.epoch_ns, 1_409_529_600_000_000_000);
    }

    #[test]
    fn overlap_and_overflow_are_refused() {
        let r = Layout::builder("x", 64)
            .time(Field::at(10, 41))
            .counter(Field::at(0, 12))
            .build();
        assert!(matches!(r, Err(Error::InvalidLayout(m)) if m.contains("overlaps")));
        let r = Layout::builder("x", 64).time(Field::at(30, 41)).build();
        assert!(matches!(r, Err(Error::InvalidLayout(m)) if m.contains("does not fit")));
    }
}
