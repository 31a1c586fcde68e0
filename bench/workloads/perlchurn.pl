# Allocation-heavy Perl workload for the side-by-side benchmark
# (bench/README.md): churns hashes and strings.  Each round builds a small
# record (a hash of strings made by sprintf, concatenation, join and
# repetition), splits and rejoins a string, edits it with a regex, keeps the
# record in one of two rings (a short one, where records die a few rounds
# later, and a long one, where they live for thousands of rounds), and adds
# to a word count in one large hash that is pruned now and then.  Debian's
# perl allocates through the C library's malloc, so every scalar, string
# buffer, array and hash bucket is an event.  Prints a checksum that does
# not depend on hash order, so that the output can be compared between
# runs.  Argument: number of rounds (default 200000).
use strict;
use warnings;

my $rounds = @ARGV ? $ARGV[0] : 200000;
my @short = (undef) x 16;
my @long = (undef) x 4096;
my %words;
my $sum = 0;

for my $r (0 .. $rounds - 1) {
    my $k = ($r * 7919) % 10007;
    my %rec = (
        id   => $r,
        name => sprintf("rec-%05d-%x", $k, $r),
        tags => join(",", map { "t" . (($k + $_) % 97) } 0 .. $r % 6),
        note => ("ab" x ($k % 40)) . "-" . $r,
    );
    for my $f (1 .. 1 + $r % 5) {
        $rec{"field$f"} = substr($rec{name}, 0, 4 + $f) . ":" . ($k * $f);
    }
    my @parts = split /,/, $rec{tags};
    my $line = join "|", reverse @parts;
    $line =~ s/t(\d+)/T$1/g;
    $rec{line} = $line;
    for my $w (@parts) {
        $words{"$w/" . ($k % 1009)}++;
    }
    if (%words > 20000) {
        # Drop the rare words: frees a few thousand entries at once.
        for my $w (keys %words) {
            delete $words{$w} if $words{$w} < 3;
        }
    }
    my $old = $r % 3 ? \$short[$r % 16] : \$long[$r % 4096];
    $sum += length($$old->{line}) + keys %{$$old} if defined $$old;
    $$old = \%rec;
    $sum = ($sum + length($line) + length($rec{note})) % 1000000007;
}
my $n = 0;
$n += $_ for values %words;
print "checksum $sum words ", scalar(keys %words), " count $n\n";
