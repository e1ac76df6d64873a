# Drawn by bnn (src/evaluation/figures.h); rerun with `gnuplot figures.gp` in this folder.
if (!exists('suffix')) suffix = ''

reset
set terminal pngcairo noenhanced font 'sans,10' size 1000,760
set output 'metrics_vs_size.png'.suffix
methods = "adam swa bayes"
set multiplot layout 2,2 title 'Metrics against ensemble size (mean and std over groups)'
set logscale x 2
set xrange [0.7:22.4]
set xlabel 'ensemble size'
set key top right
set grid
set title 'accuracy'
set ylabel 'accuracy'
plot for [i=1:words(methods)] 'data/metrics_vs_size.dat' index (i-1) using 1:2:3 with yerrorlines lw 2 pt 7 title word(methods, i)
set title 'NLL'
set ylabel 'NLL'
plot for [i=1:words(methods)] 'data/metrics_vs_size.dat' index (i-1) using 1:4:5 with yerrorlines lw 2 pt 7 title word(methods, i)
set title 'ACE'
set ylabel 'ACE'
plot for [i=1:words(methods)] 'data/metrics_vs_size.dat' index (i-1) using 1:6:7 with yerrorlines lw 2 pt 7 title word(methods, i)
set title 'RPS'
set ylabel 'RPS'
plot for [i=1:words(methods)] 'data/metrics_vs_size.dat' index (i-1) using 1:8:9 with yerrorlines lw 2 pt 7 title word(methods, i)
unset multiplot
unset output

reset
set terminal svg noenhanced dynamic font 'sans,10' size 1000,760
set output 'metrics_vs_size.svg'.suffix
methods = "adam swa bayes"
set multiplot layout 2,2 title 'Metrics against ensemble size (mean and std over groups)'
set logscale x 2
set xrange [0.7:22.4]
set xlabel 'ensemble size'
set key top right
set grid
set title 'accuracy'
set ylabel 'accuracy'
plot for [i=1:words(methods)] 'data/metrics_vs_size.dat' index (i-1) using 1:2:3 with yerrorlines lw 2 pt 7 title word(methods, i)
set title 'NLL'
set ylabel 'NLL'
plot for [i=1:words(methods)] 'data/metrics_vs_size.dat' index (i-1) using 1:4:5 with yerrorlines lw 2 pt 7 title word(methods, i)
set title 'ACE'
set ylabel 'ACE'
plot for [i=1:words(methods)] 'data/metrics_vs_size.dat' index (i-1) using 1:6:7 with yerrorlines lw 2 pt 7 title word(methods, i)
set title 'RPS'
set ylabel 'RPS'
plot for [i=1:words(methods)] 'data/metrics_vs_size.dat' index (i-1) using 1:8:9 with yerrorlines lw 2 pt 7 title word(methods, i)
unset multiplot
unset output

reset
set terminal pngcairo noenhanced font 'sans,10' size 1000,520
set output 'reliability_adam.png'.suffix
set multiplot layout 1,2 title 'Reliability of the adam ensemble'
set xrange [0:1]
set yrange [0:1]
set size ratio 1
set grid
set key top left
set style fill solid 0.5 border -1
set xlabel 'predicted probability'
set ylabel 'observed frequency'
set title 'top-label (confidence of the predicted class)'
plot 'data/reliability_adam.dat' index 0 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 0 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
set title 'class-wise (every class)'
plot 'data/reliability_adam.dat' index 1 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 1 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
unset multiplot
unset output

reset
set terminal svg noenhanced dynamic font 'sans,10' size 1000,520
set output 'reliability_adam.svg'.suffix
set multiplot layout 1,2 title 'Reliability of the adam ensemble'
set xrange [0:1]
set yrange [0:1]
set size ratio 1
set grid
set key top left
set style fill solid 0.5 border -1
set xlabel 'predicted probability'
set ylabel 'observed frequency'
set title 'top-label (confidence of the predicted class)'
plot 'data/reliability_adam.dat' index 0 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 0 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
set title 'class-wise (every class)'
plot 'data/reliability_adam.dat' index 1 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 1 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
unset multiplot
unset output

reset
set terminal pngcairo noenhanced font 'sans,10' size 1000,520
set output 'reliability_swa.png'.suffix
set multiplot layout 1,2 title 'Reliability of the swa ensemble'
set xrange [0:1]
set yrange [0:1]
set size ratio 1
set grid
set key top left
set style fill solid 0.5 border -1
set xlabel 'predicted probability'
set ylabel 'observed frequency'
set title 'top-label (confidence of the predicted class)'
plot 'data/reliability_swa.dat' index 0 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 0 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
set title 'class-wise (every class)'
plot 'data/reliability_swa.dat' index 1 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 1 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
unset multiplot
unset output

reset
set terminal svg noenhanced dynamic font 'sans,10' size 1000,520
set output 'reliability_swa.svg'.suffix
set multiplot layout 1,2 title 'Reliability of the swa ensemble'
set xrange [0:1]
set yrange [0:1]
set size ratio 1
set grid
set key top left
set style fill solid 0.5 border -1
set xlabel 'predicted probability'
set ylabel 'observed frequency'
set title 'top-label (confidence of the predicted class)'
plot 'data/reliability_swa.dat' index 0 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 0 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
set title 'class-wise (every class)'
plot 'data/reliability_swa.dat' index 1 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 1 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
unset multiplot
unset output

reset
set terminal pngcairo noenhanced font 'sans,10' size 1000,520
set output 'reliability_bayes.png'.suffix
set multiplot layout 1,2 title 'Reliability of the bayes ensemble'
set xrange [0:1]
set yrange [0:1]
set size ratio 1
set grid
set key top left
set style fill solid 0.5 border -1
set xlabel 'predicted probability'
set ylabel 'observed frequency'
set title 'top-label (confidence of the predicted class)'
plot 'data/reliability_bayes.dat' index 0 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 0 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
set title 'class-wise (every class)'
plot 'data/reliability_bayes.dat' index 1 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 1 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
unset multiplot
unset output

reset
set terminal svg noenhanced dynamic font 'sans,10' size 1000,520
set output 'reliability_bayes.svg'.suffix
set multiplot layout 1,2 title 'Reliability of the bayes ensemble'
set xrange [0:1]
set yrange [0:1]
set size ratio 1
set grid
set key top left
set style fill solid 0.5 border -1
set xlabel 'predicted probability'
set ylabel 'observed frequency'
set title 'top-label (confidence of the predicted class)'
plot 'data/reliability_bayes.dat' index 0 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 0 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
set title 'class-wise (every class)'
plot 'data/reliability_bayes.dat' index 1 using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', '' index 1 using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', x with lines dt 2 lc rgb 'black' title 'calibrated'
unset multiplot
unset output

reset
set terminal pngcairo noenhanced font 'sans,10' size 1000,560
set output 'loss_traces.png'.suffix
members = "member_000 member_001 member_002 member_003 member_004 member_005 member_006 member_007 member_008 member_009 member_010 member_011 member_012 member_013 member_014 member_015"
set title 'Training loss per member (mean cross-entropy per example)'
set xlabel 'epoch (Adam, then SWA, then sampling)'
set ylabel 'training loss'
set grid
set key outside right
set xrange [0.5:60.5]
set label 'adam' at 0.5, graph 0.96 left offset 0.5,0 tc rgb 'gray40'
set arrow from 15.5, graph 0 to 15.5, graph 1 nohead dt 2 lc rgb 'gray40'
set label 'swa' at 15.5, graph 0.96 left offset 0.5,0 tc rgb 'gray40'
set arrow from 20.5, graph 0 to 20.5, graph 1 nohead dt 2 lc rgb 'gray40'
set label 'sample' at 20.5, graph 0.96 left offset 0.5,0 tc rgb 'gray40'
plot for [i=1:words(members)] 'data/loss_traces.dat' index (i-1) using 1:2 with linespoints pt 7 ps 0.5 title word(members, i)
unset multiplot
unset output

reset
set terminal svg noenhanced dynamic font 'sans,10' size 1000,560
set output 'loss_traces.svg'.suffix
members = "member_000 member_001 member_002 member_003 member_004 member_005 member_006 member_007 member_008 member_009 member_010 member_011 member_012 member_013 member_014 member_015"
set title 'Training loss per member (mean cross-entropy per example)'
set xlabel 'epoch (Adam, then SWA, then sampling)'
set ylabel 'training loss'
set grid
set key outside right
set xrange [0.5:60.5]
set label 'adam' at 0.5, graph 0.96 left offset 0.5,0 tc rgb 'gray40'
set arrow from 15.5, graph 0 to 15.5, graph 1 nohead dt 2 lc rgb 'gray40'
set label 'swa' at 15.5, graph 0.96 left offset 0.5,0 tc rgb 'gray40'
set arrow from 20.5, graph 0 to 20.5, graph 1 nohead dt 2 lc rgb 'gray40'
set label 'sample' at 20.5, graph 0.96 left offset 0.5,0 tc rgb 'gray40'
plot for [i=1:words(members)] 'data/loss_traces.dat' index (i-1) using 1:2 with linespoints pt 7 ps 0.5 title word(members, i)
unset multiplot
unset output

reset
set terminal pngcairo noenhanced font 'sans,10' size 1000,480
set output 'rhat_vs_epoch.png'.suffix
curves = '"members"'
set multiplot layout 1,2 title 'R-hat of the sampling loss across 16 members (different x*)'
set xlabel 'last epoch used (draws from the end of burn-in)'
set ylabel 'R-hat'
set grid
set key below
set yrange [*<0.99:1.12<*]
set xtics 4
set title 'R-hat'
plot for [i=1:words(curves)] 'data/rhat_vs_epoch.dat' index (2*i-2) using 1:2 with linespoints pt 7 ps 0.6 title word(curves, i), 1.1 with lines dt 2 lw 2 lc rgb '#cc3311' title '1.1', 1.01 with lines dt 3 lw 2 lc rgb '#0077bb' title '1.01'
set title 'split R-hat'
plot for [i=1:words(curves)] 'data/rhat_vs_epoch.dat' index (2*i-1) using 1:2 with linespoints pt 7 ps 0.6 title word(curves, i), 1.1 with lines dt 2 lw 2 lc rgb '#cc3311' title '1.1', 1.01 with lines dt 3 lw 2 lc rgb '#0077bb' title '1.01'
unset multiplot
unset output

reset
set terminal svg noenhanced dynamic font 'sans,10' size 1000,480
set output 'rhat_vs_epoch.svg'.suffix
curves = '"members"'
set multiplot layout 1,2 title 'R-hat of the sampling loss across 16 members (different x*)'
set xlabel 'last epoch used (draws from the end of burn-in)'
set ylabel 'R-hat'
set grid
set key below
set yrange [*<0.99:1.12<*]
set xtics 4
set title 'R-hat'
plot for [i=1:words(curves)] 'data/rhat_vs_epoch.dat' index (2*i-2) using 1:2 with linespoints pt 7 ps 0.6 title word(curves, i), 1.1 with lines dt 2 lw 2 lc rgb '#cc3311' title '1.1', 1.01 with lines dt 3 lw 2 lc rgb '#0077bb' title '1.01'
set title 'split R-hat'
plot for [i=1:words(curves)] 'data/rhat_vs_epoch.dat' index (2*i-1) using 1:2 with linespoints pt 7 ps 0.6 title word(curves, i), 1.1 with lines dt 2 lw 2 lc rgb '#cc3311' title '1.1', 1.01 with lines dt 3 lw 2 lc rgb '#0077bb' title '1.01'
unset multiplot
unset output

